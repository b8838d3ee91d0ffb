package clients

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/wirecode"
)

// callProducer sends a CallProducer and waits for its Reply.
func (r *rig) callProducer(t *testing.T, id string, timeout time.Duration) (Answer, error) {
	t.Helper()
	type answer struct {
		resp Answer
		err  error
	}
	ch := make(chan answer, 1)
	req := ReplyMessage{Topic: "T", Body: []byte("reply")}
	r.s.Send(&CallProducer{ClientID: id, Request: req, Timeout: timeout,
		Reply: func(resp Answer, err error) { ch <- answer{resp, err} }})
	select {
	case a := <-ch:
		return a.resp, a.err
	case <-time.After(wait):
		t.Fatal("CallProducer not answered")
		return Answer{}, nil
	}
}

// answer sends the client's answer to the last request conn got (it runs
// on its own goroutine: a missing request shows as the call's timeout).
func (r *rig) answer(c *fakeConn, code int32) {
	deadline := time.Now().Add(wait)
	for {
		c.mu.Lock()
		n := len(c.sent)
		var last Request
		if n > 0 {
			last = c.sent[n-1]
		}
		c.mu.Unlock()
		if _, ok := last.Push.(ReplyMessage); ok && !last.Oneway {
			r.s.Send(&Response{ConnID: c.id, Opaque: last.Opaque, Answer: Answer{Code: code}})
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCallProducerFindsTheRequester(t *testing.T) {
	r := newRig(t, time.Minute)
	hbConn, reqConn := &fakeConn{id: 1}, &fakeConn{id: 2}

	// Unknown: not online.
	if _, err := r.callProducer(t, "nobody", time.Second); !errors.Is(err, ErrNotOnline) {
		t.Fatalf("unknown client: %v, want ErrNotOnline", err)
	}
	// A consumer-only client is not a producer.
	r.heartbeat(t, hbConn, consumer("c-only", "G"))
	if _, err := r.callProducer(t, "c-only", time.Second); !errors.Is(err, ErrNotOnline) {
		t.Fatalf("consumer-only client: %v, want ErrNotOnline", err)
	}

	// Known only by the connection its request came on.
	r.s.Send(&Requester{ClientID: "req-1", Conn: reqConn})
	go r.answer(reqConn, wirecode.Success)
	resp, err := r.callProducer(t, "req-1", time.Second)
	if err != nil || resp.Code != wirecode.Success {
		t.Fatalf("requester by connection: %v %v", resp, err)
	}

	// Known by its heartbeat: that connection is used.
	r.heartbeat(t, hbConn, HeartbeatData{ClientID: "req-1", ProducerDataSet: []ProducerData{{GroupName: "PG"}}})
	go r.answer(hbConn, wirecode.SystemError)
	resp, err = r.callProducer(t, "req-1", time.Second)
	if err != nil || resp.Code != wirecode.SystemError {
		t.Fatalf("requester by heartbeat: %v %v", resp, err)
	}

	// No answer in time.
	if _, err := r.callProducer(t, "req-1", 50*time.Millisecond); !errors.Is(err, ErrCallTimeout) {
		t.Fatalf("silent requester: %v, want ErrCallTimeout", err)
	}

	// The connection closes: the record goes with it.
	r.s.Send(&Closed{ConnID: reqConn.id})
	r.s.Send(&Closed{ConnID: hbConn.id})
	if _, err := r.callProducer(t, "req-1", time.Second); !errors.Is(err, ErrNotOnline) {
		t.Fatalf("after close: %v, want ErrNotOnline", err)
	}
}

func TestNotifyGroupSendsOnewayToEveryMember(t *testing.T) {
	r := newRig(t, time.Minute)
	a, b, other := &fakeConn{id: 1}, &fakeConn{id: 2}, &fakeConn{id: 3}
	r.heartbeat(t, a, consumer("a", "G"))
	r.heartbeat(t, b, consumer("b", "G"))
	r.heartbeat(t, other, consumer("o", "H"))
	ch := make(chan []string, 1)
	req := ResetOffset{Topic: "T", Group: "G"}
	r.s.Send(&NotifyGroup{Group: "G", Request: req, Reply: func(sent []string) { ch <- sent }})
	var sent []string
	select {
	case sent = <-ch:
	case <-time.After(wait):
		t.Fatal("NotifyGroup not answered")
	}
	if !slices.Equal(sent, []string{"a", "b"}) {
		t.Fatalf("sent to %v, want [a b]", sent)
	}
	for _, c := range []*fakeConn{a, b, other} {
		c.mu.Lock()
		n := 0
		for _, r := range c.sent {
			if r.Push.Code() == wirecode.ResetConsumerClientOffset {
				n++
				if !r.Oneway {
					t.Errorf("conn %d: 220 not oneway", c.id)
				}
			}
		}
		c.mu.Unlock()
		if want := map[uint64]int{1: 1, 2: 1, 3: 0}[c.id]; n != want {
			t.Errorf("conn %d got %d resets, want %d", c.id, n, want)
		}
	}
}
