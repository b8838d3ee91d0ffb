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

// TestReplicaStateNotStored: in a replicated group the engine stores no
// journal replay start as a replica, nor once promoted until it has read
// the journal again as master (Reload): the state it held as a replica
// knows none of the old master's deliveries, and a start computed from it
// (the journal's end) made the promoted broker skip the acks it replicated
// (an acked message delivered again after a failover).
func TestReplicaStateNotStored(t *testing.T) {
	st, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	master := false
	e := New(Options{Store: st, Master: func() bool { return master }, Logger: zerolog.Nop()})
	if !e.recovered() {
		t.Fatal("not recovered on an empty store")
	}
	if e.ownsState() {
		t.Fatal("a replica's engine owns the group's POP state")
	}
	master = true // promoted: the role changes before the engine's Reload
	if e.ownsState() {
		t.Fatal("the engine owns the state it built as a replica once the role says master")
	}
	e.reload(1)
	if !e.replayOK || !e.ownsState() {
		t.Fatalf("after Reload as master: replayed %v, owns %v", e.replayOK, e.ownsState())
	}
	master = false // demoted
	if e.ownsState() {
		t.Fatal("a demoted engine owns the group's POP state")
	}
	if standalone := New(Options{Store: st, Logger: zerolog.Nop()}); !standalone.ownsState() {
		t.Fatal("a standalone broker's engine does not own its state")
	}
}
