package pull

import (
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/storage"
)

// longPoll builds a long poll of T/0 at offset from connection conn.
func longPoll(conn uint64, offset int64) *Request {
	req := request("T", 0, offset, 32, "*")
	req.SysFlag = FlagSuspend
	req.SuspendUntil = time.Now().Add(time.Minute)
	req.ConnID = conn
	return req
}

// TestParkedPullsBoundedPerConnection parks long polls up to the bound of
// their connection: past it a long poll is answered at once with the
// answer of a pull that does not suspend, other connections still park,
// and a connection whose parked pulls were answered parks again.
func TestParkedPullsBoundedPerConnection(t *testing.T) {
	r := newRig(t, storage.Options{})
	refused := 0
	r.startWith(t, Options{MaxParkedPerConn: 2, ParkRefused: func() { refused++ }})
	a, b := r.send(longPoll(1, 0)), r.send(longPoll(1, 0))
	r.barrier(t)
	notAnswered(t, a, "first of connection 1")
	notAnswered(t, b, "second of connection 1")
	over := longPoll(1, 0)
	check(t, "third of connection 1", over, await(t, r.send(over)),
		want{NoNewMessage, "NO_MESSAGE_IN_QUEUE", 0, 0, 0, nil})
	other := r.send(longPoll(2, 0))
	r.barrier(t)
	notAnswered(t, other, "connection 2")
	if n := r.parked.Load(); n != 3 || refused != 1 {
		t.Fatalf("parked %d, refused %d; want 3 parked, 1 refused", n, refused)
	}
	// A message wakes all three; connection 1 may park two again.
	rec := r.put(t, "T", 0, "", 0)
	r.p.Send(&Arrived{Queues: []dispatch.Arrival{{Topic: "T", QueueID: 0, MaxOffset: 1}}})
	for _, ch := range []<-chan Result{a, b, other} {
		if got := await(t, ch); got.Outcome != Found || string(got.Body) != string(rec) {
			t.Fatalf("woken pull: code %d %q", got.Outcome, got.Remark)
		}
	}
	c, d := r.send(longPoll(1, 1)), r.send(longPoll(1, 1))
	r.barrier(t)
	notAnswered(t, c, "connection 1 again")
	notAnswered(t, d, "connection 1 again, second")
	if refused != 1 {
		t.Fatalf("refused %d after the wake, want still 1", refused)
	}
}

// TestBusyConnectionIsRefusedWithoutARead answers a pull whose connection
// cannot take more answers with SYSTEM_BUSY and the connection's remark,
// without reading or counting it.
func TestBusyConnectionIsRefusedWithoutARead(t *testing.T) {
	r := newRig(t, storage.Options{})
	r.put(t, "T", 0, "", 0)
	served := 0
	r.startWith(t, Options{Served: func(string, string, int, int) { served++ }})
	req := request("T", 0, 0, 32, "*")
	req.Busy = func() string { return "[OUTPUT_FULL]read your answers" }
	got := r.pull(t, req)
	if got.Outcome != Busy || got.Remark != "[OUTPUT_FULL]read your answers" || len(got.Body) != 0 {
		t.Fatalf("busy pull: code %d %q, %d body bytes; want SYSTEM_BUSY with the remark", got.Outcome, got.Remark, len(got.Body))
	}
	req = request("T", 0, 0, 32, "*")
	req.Busy = func() string { return "" }
	if got := r.pull(t, req); got.Outcome != Found {
		t.Fatalf("pull of a connection that reads: code %d %q", got.Outcome, got.Remark)
	}
	if served != 1 {
		t.Fatalf("served %d pulls, want 1 (the refused one is not counted)", served)
	}
}

// TestSlowReadHoldsOnlyItsReader blocks one pull inside a reader (its
// Busy check stands for a slow disk read): with two readers every other
// pull is still answered meanwhile; with one, none is.
func TestSlowReadHoldsOnlyItsReader(t *testing.T) {
	for _, readers := range []int{2, 1} {
		r := newRig(t, storage.Options{})
		r.put(t, "T", 0, "", 0)
		r.startWith(t, Options{Readers: readers})
		release, entered := make(chan struct{}), make(chan struct{})
		slow := request("T", 0, 0, 32, "*")
		slow.Busy = func() string { close(entered); <-release; return "" }
		slowCh := r.send(slow)
		<-entered
		var others []<-chan Result
		for range 8 {
			others = append(others, r.send(request("T", 0, 0, 32, "*")))
		}
		answered := 0
		deadline := time.After(2 * time.Second)
	wait:
		for _, ch := range others {
			select {
			case got := <-ch:
				if got.Outcome != Found {
					t.Fatalf("readers %d: code %d %q", readers, got.Outcome, got.Remark)
				}
				answered++
			case <-deadline:
				break wait
			}
		}
		close(release)
		await(t, slowCh)
		for _, ch := range others[answered:] { // what waited in the backlog is served once a reader is free
			if got := await(t, ch); got.Outcome != Found {
				t.Fatalf("readers %d, after the slow read: code %d %q", readers, got.Outcome, got.Remark)
			}
		}
		r.barrier(t) // the pull stage counts the hand-off after the reader may have answered
		if n := r.svc.Backlog(); n != 0 {
			t.Fatalf("readers %d: backlog %d after every pull was answered", readers, n)
		}
		switch {
		case readers > 1 && answered != len(others):
			t.Fatalf("%d readers: %d of %d pulls answered while one read was slow", readers, answered, len(others))
		case readers == 1 && answered != 0:
			t.Fatalf("one reader: %d pulls answered while it was held (the test cannot tell)", answered)
		}
		r.stop()
	}
}
