package timer

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

func storeWithRecord(t *testing.T, rec *message.Record) (*storage.Store, int64, int32) {
	t.Helper()
	st, err := storage.Open(t.TempDir(), storage.Options{SegmentSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	enc, err := rec.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := st.CommitLog.Append([][]byte{enc})
	if err != nil {
		t.Fatal(err)
	}
	return st, offs[0], int32(len(enc))
}

func TestRebuildRestoresRealTopic(t *testing.T) {
	host := netip.MustParseAddrPort("10.0.0.1:10911")
	props := map[string]string{
		message.PropRealTopic: "orders", message.PropRealQueueID: "3", message.PropTimerOutMS: "5000",
		message.PropUniqKey: "U1", message.PropTags: "A", message.PropKeys: "k1 k2", message.PropDelay: "2",
	}
	st, off, size := storeWithRecord(t, &message.Record{
		QueueID: 0, Flag: 9, SysFlag: 0, BornTimestamp: 11, BornHost: host, StoreTimestamp: 12, StoreHost: host,
		ReconsumeTimes: 2, Body: []byte("payload"), Topic: Topic, Properties: message.EncodeProperties(props),
	})
	raw, err := st.CommitLog.ReadAt(off, size)
	if err != nil {
		t.Fatal(err)
	}
	p, reason := rebuild(raw, timerwheel.Timer{DeliverMs: 5000, CommitLogOffset: off, Size: size, AddedMs: 100}, 6000)
	if reason != "" {
		t.Fatalf("rebuild refused: %s", reason)
	}
	if p.key.Topic != "orders" || p.key.QueueID != 3 || p.due != 5000 || p.identity() != "U1@5000" {
		t.Fatalf("put %+v", p)
	}
	r, _, err := message.Decode(p.record)
	if err != nil {
		t.Fatal(err)
	}
	got := message.DecodeProperties(r.Properties)
	if r.Topic != "orders" || r.QueueID != 3 || string(r.Body) != "payload" || r.Flag != 9 || r.ReconsumeTimes != 2 ||
		r.BornTimestamp != 11 || r.StoreTimestamp != 6000 {
		t.Fatalf("record %+v", r)
	}
	if got[message.PropTimerEnqueueMS] != "100" || got[message.PropTimerDequeueMS] != "6000" || got[message.PropTags] != "A" ||
		got[message.PropKeys] != "k1 k2" || got[message.PropUniqKey] != "U1" || got[message.PropTimerOutMS] != "5000" {
		t.Fatalf("properties %v", got)
	}
	if _, ok := got[message.PropDelay]; ok {
		t.Fatal("DELAY kept: a consumer re-sending it would delay it again")
	}
	id, ok := isWrittenBack(p.record)
	if !ok || id != "U1@5000" {
		t.Fatalf("isWrittenBack = %q %v", id, ok)
	}
}

func TestRebuildRefusals(t *testing.T) {
	host := netip.MustParseAddrPort("10.0.0.1:10911")
	st, off, size := storeWithRecord(t, &message.Record{BornHost: host, StoreHost: host, Body: []byte("x"), Topic: Topic,
		Properties: message.EncodeProperties(map[string]string{message.PropTimerOutMS: "1"})})
	raw, err := st.CommitLog.ReadAt(off, size)
	if err != nil {
		t.Fatal(err)
	}
	if _, reason := rebuild(raw, timerwheel.Timer{CommitLogOffset: off, Size: size}, 2); reason != "no_real_topic" {
		t.Fatalf("missing REAL_TOPIC: reason %q", reason)
	}
	if _, reason := rebuild(nil, timerwheel.Timer{CommitLogOffset: off + 1<<30, Size: size}, 2); reason != "unreadable" {
		t.Fatalf("unreadable message: reason %q", reason)
	}
	if _, reason := rebuild([]byte("garbage"), timerwheel.Timer{}, 2); reason != "undecodable" {
		t.Fatalf("garbage: reason %q", reason)
	}
	if _, ok := isWrittenBack([]byte("short")); ok {
		t.Fatal("garbage recognised as a written-back timer")
	}
	timerCopy, _ := st.CommitLog.ReadAt(off, size)
	if _, ok := isWrittenBack(timerCopy); ok {
		t.Fatal("a message still in the timer topic is not written back")
	}
}

func TestFaultsFireOnce(t *testing.T) {
	var nilFaults *Faults
	nilFaults.Hit("x") // no-op
	f := &Faults{}
	f.Arm("s")
	f.Hit("other")
	func() {
		defer func() {
			r := recover()
			err, ok := r.(error)
			if !ok || !errors.Is(err, errInjected) {
				t.Fatalf("recovered %v, want the injected fault", r)
			}
		}()
		f.Hit("s")
	}()
	f.Hit("s") // disarmed after firing
}

// TestRebuildFastPathKeepsProperties checks the common case (no DELAY, no
// earlier TIMER_ENQUEUE_MS): stored properties are kept as they are and the
// two timer properties appended.
func TestRebuildFastPathKeepsProperties(t *testing.T) {
	host := netip.MustParseAddrPort("10.0.0.1:10911")
	props := map[string]string{message.PropRealTopic: "orders", message.PropRealQueueID: "0",
		message.PropTimerOutMS: "7", message.PropUniqKey: "U2", "custom": "v"}
	st, off, size := storeWithRecord(t, &message.Record{BornHost: host, StoreHost: host, Topic: Topic,
		Body: []byte("b"), Properties: message.EncodeProperties(props)})
	raw, err := st.CommitLog.ReadAt(off, size)
	if err != nil {
		t.Fatal(err)
	}
	p, reason := rebuild(raw, timerwheel.Timer{DeliverMs: 7, AddedMs: 3}, 9)
	if reason != "" || p.identity() != "U2@7" {
		t.Fatalf("reason %q ident %q", reason, p.identity())
	}
	r, _, err := message.Decode(p.record)
	if err != nil {
		t.Fatal(err)
	}
	got := message.DecodeProperties(r.Properties)
	for k, v := range props {
		if got[k] != v {
			t.Fatalf("%s = %q, want %q", k, got[k], v)
		}
	}
	if got[message.PropTimerEnqueueMS] != "3" || got[message.PropTimerDequeueMS] != "9" {
		t.Fatalf("timer properties %v", got)
	}
}

// TestRebuilderBatchAllocatesNothingPerMessage rebuilds many messages into
// one arena: the common case costs no allocation per message (the arena is
// the batch's only one), and every put still holds its own record and
// identity.
func TestRebuilderBatchAllocatesNothingPerMessage(t *testing.T) {
	host := netip.MustParseAddrPort("10.0.0.1:10911")
	props := map[string]string{message.PropRealTopic: "orders", message.PropRealQueueID: "4",
		message.PropTimerOutMS: "7", message.PropUniqKey: "U3"}
	st, off, size := storeWithRecord(t, &message.Record{BornHost: host, StoreHost: host, Topic: Topic,
		Body: []byte("body"), Properties: message.EncodeProperties(props)})
	raw, err := st.CommitLog.ReadAt(off, size)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	var b rebuilder
	puts := make([]put, 0, n)
	b.rebuild(raw, timerwheel.Timer{}, 1) // warm the scratch and the topic cache
	allocs := testing.AllocsPerRun(1, func() {
		b.reset(n, n*(int(size)+rebuildGrowth)) // the batch's one allocation
		puts = puts[:0]
		for i := range n {
			p, reason := b.rebuild(raw, timerwheel.Timer{DeliverMs: 7, AddedMs: int64(i)}, 9)
			if reason != "" {
				t.Fatal(reason)
			}
			puts = append(puts, p)
		}
	})
	if allocs > 1 {
		t.Errorf("%v allocations for %d messages, want the arena's only", allocs, n)
	}
	for i, p := range puts {
		r, _, err := message.Decode(p.record)
		if err != nil || r.Topic != "orders" || r.QueueID != 4 || string(r.Body) != "body" || p.identity() != "U3@7" {
			t.Fatalf("put %d: %+v %v ident %q", i, r, err, p.identity())
		}
	}
}

// TestStaleTimerIsNotDelivered checks a released timer against the record
// it names: a record that is not that timer's message (a crash cut the
// CommitLog's tail and other messages were written at its offset) is
// dropped as stale, whatever it holds.
func TestStaleTimerIsNotDelivered(t *testing.T) {
	host := netip.MustParseAddrPort("10.0.0.1:10911")
	record := func(topic string, queueOffset int64, outMs, uniq string) []byte {
		props := map[string]string{message.PropRealTopic: "orders", message.PropRealQueueID: "1",
			message.PropTimerOutMS: outMs, message.PropUniqKey: uniq}
		st, off, size := storeWithRecord(t, &message.Record{BornHost: host, StoreHost: host, Topic: topic,
			QueueOffset: queueOffset, Body: []byte("b"), Properties: message.EncodeProperties(props)})
		raw, err := st.CommitLog.ReadAt(off, size)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	timer := timerwheel.Timer{DeliverMs: 5000, QueueOffset: 7, KeyHash: timerwheel.KeyHash("orders", "U1")}
	cases := []struct {
		name   string
		raw    []byte
		timer  timerwheel.Timer
		reason string
	}{
		{"its own record", record(Topic, 7, "5000", "U1"), timer, ""},
		{"its retention copy", record(RollTopic, 0, "5000", "U1"), timer, ""},
		{"another queue offset", record(Topic, 8, "5000", "U1"), timer, "stale"},
		{"another due time", record(Topic, 7, "4000", "U1"), timer, "stale"},
		{"another message", record(Topic, 7, "5000", "U2"), timer, "stale"},
		{"a plain message", record("orders", 7, "5000", "U1"), timer, "stale"},
		{"no key to check", record(Topic, 7, "5000", "U2"), timerwheel.Timer{DeliverMs: 5000, QueueOffset: 7}, ""},
	}
	for _, c := range cases {
		if _, reason := rebuild(c.raw, c.timer, 6000); reason != c.reason {
			t.Errorf("%s: reason %q, want %q", c.name, reason, c.reason)
		}
	}
	if a, b := timerwheel.KeyHashBytes([]byte("orders"), []byte("U1")), timerwheel.KeyHash("orders", "U1"); a != b {
		t.Errorf("KeyHashBytes %x, KeyHash %x", a, b)
	}
}
