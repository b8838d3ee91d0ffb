package pop

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestRecoveryWaitsForDispatch: the journal is not read while the consume
// queues lag the CommitLog's end at start; a request held meanwhile is
// answered "recovering" once it waited past its poll time, and the journal
// is read as soon as the dispatch stage catches up.
func TestRecoveryWaitsForDispatch(t *testing.T) {
	st, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := (&message.Record{Topic: "t", Body: []byte("x")}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CommitLog.Append([][]byte{rec}); err != nil {
		t.Fatal(err)
	}
	if err := st.CommitLog.Sync(); err != nil { // durable, as a log recovered at start is
		t.Fatal(err)
	}
	now := time.UnixMilli(1_000_000)
	e := New(Options{Store: st, Now: func() time.Time { return now }, Logger: zerolog.Nop()})
	if e.startEnd <= 0 {
		t.Fatalf("startEnd %d after an append", e.startEnd)
	}
	st.Dispatched.Store(0)
	if e.recovered() {
		t.Fatal("recovered while the consume queues lag the CommitLog")
	}
	var got *Result
	e.hold(&Pop{Group: "g", Topic: "t", Reply: func(r *Result) { got = r }})
	now = now.Add(50 * time.Millisecond)
	e.answerHeld(false)
	if got != nil {
		t.Fatal("a held pop was answered before 100 ms")
	}
	now = now.Add(100 * time.Millisecond)
	e.answerHeld(false)
	if got == nil || got.Code != CodePollingTimeout || got.Remark != remarkRecovering {
		t.Fatalf("held pop answered %+v, want polling timeout %q", got, remarkRecovering)
	}
	st.Dispatched.Store(e.startEnd)
	if !e.recovered() || !e.replayOK {
		t.Fatal("not recovered once the dispatch stage caught up")
	}
}
