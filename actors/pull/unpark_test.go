package pull

import (
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage"
)

// TestUnparkHandsOverOneGroupsPulls: Unpark takes the group's long polls
// of the named queues out of the table (an admin reset answers them) and
// leaves every other pull parked.
func TestUnparkHandsOverOneGroupsPulls(t *testing.T) {
	r := newRig(t, storage.Options{})
	r.put(t, "T", 0, "", 0)
	r.put(t, "T", 1, "", 0)
	r.start(t, 0)
	park := func(group string, queue int32) (*Request, <-chan Result) {
		req := request("T", queue, 1, 32, "*")
		req.Group, req.SysFlag, req.SuspendUntil = group, FlagSuspend, time.Now().Add(time.Minute)
		return req, r.send(req)
	}
	mine, mineCh := park("G", 0)
	_, otherGroupCh := park("H", 0)
	_, otherQueueCh := park("G", 1)
	r.barrier(t)
	handed := make(chan *Request, 4)
	r.p.Send(&Unpark{Group: "G", Topic: "T", Queues: []int32{0}, Each: func(req *Request) { handed <- req }})
	r.barrier(t)
	select {
	case got := <-handed:
		if got != mine {
			t.Fatalf("handed over %+v, want the group's pull of queue 0", got)
		}
	case <-time.After(wait):
		t.Fatal("the group's parked pull was not handed over")
	}
	if len(handed) != 0 {
		t.Fatalf("%d more pulls handed over", len(handed))
	}
	notAnswered(t, mineCh, "after being handed over (the caller answers it)")
	notAnswered(t, otherGroupCh, "another group's pull")
	notAnswered(t, otherQueueCh, "the group's pull of another queue")
	if n := r.parked.Load(); n != 2 {
		t.Fatalf("parked count %d, want 2", n)
	}
}
