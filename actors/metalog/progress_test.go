package metalog

import (
	"testing"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/metarec"
)

// appendRecord appends one record of topic to st's CommitLog and indexes
// it in the topic's queue 0; it returns the record's CommitLog offset.
func appendRecord(t *testing.T, st *storage.Store, topic string, body []byte) int64 {
	t.Helper()
	q, err := st.Queues.Queue(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := (&message.Record{Topic: topic, QueueOffset: q.MaxOffset(), Body: body}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := st.CommitLog.Append([][]byte{b})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Append(consumequeue.Unit{Offset: offs[0], Size: int32(len(b))}); err != nil {
		t.Fatal(err)
	}
	return offs[0]
}

// TestProgressAppliedBelow: AppliedBelow(end) holds only once the
// CommitLog is dispatched up to end and the published cursor is past
// every metadata record below end; records at or past end do not hold
// it back; a stage that has not started holds everything back.
func TestProgressAppliedBelow(t *testing.T) {
	st, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := NewProgress(st)
	check := func(what string, end int64, want bool) {
		t.Helper()
		got, err := p.AppliedBelow(end)
		if err != nil || got != want {
			t.Fatalf("%s: AppliedBelow(%d) = %v, %v; want %v", what, end, got, err, want)
		}
	}
	check("before the stage started", 0, false)
	p.publish(0)
	check("an empty log", 0, true)
	appendRecord(t, st, "T", []byte("data"))
	rec1 := appendRecord(t, st, metarec.Topic, []byte("meta1"))
	rec2 := appendRecord(t, st, metarec.Topic, []byte("meta2"))
	end := st.CommitLog.MaxOffset()
	st.Dispatched.Store(rec1) // the first metadata record is not indexed yet
	check("dispatch behind the end", end, false)
	st.Dispatched.Store(end)
	check("no metadata record applied", end, false)
	check("only a data record below the end", rec1, true)
	p.publish(1)
	check("the second record not applied", end, false)
	check("the second record at the end", rec2, true)
	p.publish(2)
	check("every record applied", end, true)
	p.publish(1) // a restarted stage publishes from its saved cursor: never lower
	if c := p.Cursor(); c != 2 {
		t.Fatalf("cursor %d after publishing a lower one, want 2", c)
	}
}
