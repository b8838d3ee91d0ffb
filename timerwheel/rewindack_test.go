package timerwheel

import "testing"

// TestRewindAckReleasesAgain: batches acknowledged after a position whose
// deliveries were lost (held back from durability by LimitDurableAck) are
// released again, in order and never early, after RewindAck; a flush in
// between never made them durable, and a position below the durable one
// is not taken.
func TestRewindAckReleasesAgain(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	mustAdd(t, s, T0, timerAt(1, T0+100), timerAt(2, T0+200), timerAt(3, T0+300), timerAt(4, T0+5000))
	b1, err := s.Due(T0+150, 10) // timer 1
	if err != nil || b1.Len() != 1 {
		t.Fatalf("first batch: %d timers, %v", b1.Len(), err)
	}
	if err := s.Ack(b1); err != nil {
		t.Fatal(err)
	}
	s.LimitDurableAck(b1.To) // timer 1's delivery is durable
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	b2, err := s.Due(T0+350, 10) // timers 2 and 3: their deliveries will be lost
	if err != nil || b2.Len() != 2 {
		t.Fatalf("second batch: %d timers, %v", b2.Len(), err)
	}
	if err := s.Ack(b2); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil { // the limit keeps b2 from being durable
		t.Fatal(err)
	}
	if got := s.Checkpoint().DurableAcked; got != b1.To {
		t.Fatalf("durable ack %v, want %v (held at the first batch)", got, b1.To)
	}
	if err := s.RewindAck(b2.From); err != nil {
		t.Fatal(err)
	}
	again, err := s.Due(T0+400, 10)
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != 2 || again.Timers[0].CommitLogOffset != 2 || again.Timers[1].CommitLogOffset != 3 {
		t.Fatalf("after RewindAck released %+v, want timers 2 and 3", again.Timers)
	}
	if again.From != b2.From {
		t.Fatalf("re-released from %v, want %v", again.From, b2.From)
	}
	if err := s.Ack(again); err != nil {
		t.Fatal(err)
	}
	// Below the durable position: clamped there, timer 1 is not released again.
	if err := s.RewindAck(Cursor{Ms: T0}); err != nil {
		t.Fatal(err)
	}
	b, err := s.Due(T0+400, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range b.Timers {
		if tm.CommitLogOffset == 1 {
			t.Fatal("timer 1, durably acknowledged, released again")
		}
		if tm.CommitLogOffset == 4 {
			t.Fatal("timer 4 released early")
		}
	}
}
