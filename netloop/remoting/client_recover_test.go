package remoting

import (
	"testing"
	"time"
)

// A panic in OnRequest is that request's SYSTEM_ERROR: the client and its
// connection serve on, the next request included.
func TestClientOnRequestPanic(t *testing.T) {
	answers := make(chan *Command, 4)
	addr := servePeer(t, func(p *peer) {
		p.send(t, &Command{Code: CheckTransactionState, Opaque: 200, ExtFields: map[string]string{"panic": "yes"}})
		p.send(t, &Command{Code: CheckTransactionState, Opaque: 201})
		for {
			cmd, err := ReadFrame(p.conn, 0)
			if err != nil {
				return
			}
			answers <- cmd
		}
	})
	c := dialT(t, addr, ClientOptions{OnRequest: func(req *Command) *Command {
		if req.Field("panic") != "" {
			panic("check listener exploded")
		}
		return &Command{Code: Success}
	}})
	got := map[int32]*Command{}
	timeout := time.After(5 * time.Second)
	for len(got) < 2 {
		select {
		case a := <-answers:
			got[a.Opaque] = a
		case <-timeout:
			t.Fatalf("answers so far: %v", got)
		}
	}
	if a := got[200]; a == nil || !a.IsResponse() || a.Code != SystemError {
		t.Fatalf("answer to the request whose handler panicked: %+v, want SYSTEM_ERROR", a)
	}
	if a := got[201]; a == nil || a.Code != Success {
		t.Fatalf("answer to the next request: %+v, want SUCCESS", a)
	}
	select {
	case <-c.Done():
		t.Fatalf("the client closed: %v", c.Err())
	default:
	}
}
