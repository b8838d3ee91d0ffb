package netloop

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// holdHandler keeps every request until the test answers it.
type holdHandler struct {
	held chan held
	seen atomic.Int64
	body []byte // the answers' body
}

type held struct {
	c   *Conn
	cmd *remoting.Command
}

func (h *holdHandler) OnOpen(*Conn)         {}
func (h *holdHandler) OnClose(*Conn, error) {}
func (h *holdHandler) OnCommand(c *Conn, cmd *remoting.Command) {
	if cmd.IsResponse() || cmd.IsOneway() {
		return
	}
	h.seen.Add(1)
	h.held <- held{c, cmd}
}

// answer answers one held request from the test's goroutine (not the
// event loop's), as a stage does.
func (h *holdHandler) answer(t *testing.T) {
	t.Helper()
	select {
	case r := <-h.held:
		resp := remoting.NewResponse(r.cmd, remoting.Success, "")
		resp.Body = h.body
		if err := r.c.Send(resp); err != nil {
			t.Fatalf("answer: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no request held")
	}
}

func TestRefuseAnswersNewRequestsAndFlushWaitsForHeldOnes(t *testing.T) {
	h := &holdHandler{held: make(chan held, 16)}
	s := startServer(t, 0, h)
	c := dial(t, s.Addr(), remoting.ClientOptions{})
	results := make(chan *remoting.Command, 3)
	for range 3 {
		if err := c.Go(remoting.NewRequest(remoting.SendMessage, nil, []byte("x")), 10*time.Second,
			func(resp *remoting.Command, err error) {
				if err != nil {
					t.Errorf("held request: %v", err)
				}
				results <- resp
			}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "three requests held", func() bool { return h.seen.Load() == 3 })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Refuse(ctx, remoting.SystemBusy, "stopping"); err != nil {
		t.Fatalf("Refuse: %v", err)
	}
	resp := invoke(t, c, remoting.NewRequest(remoting.SendMessage, nil, []byte("late")))
	if resp.Code != remoting.SystemBusy || resp.Remark != "stopping" {
		t.Fatalf("request after Refuse: code %d %q, want SYSTEM_BUSY \"stopping\"", resp.Code, resp.Remark)
	}
	// A connection opened after Refuse is refused too.
	c2 := dial(t, s.Addr(), remoting.ClientOptions{})
	if resp := invoke(t, c2, remoting.NewRequest(remoting.PullMessage, nil, nil)); resp.Code != remoting.SystemBusy {
		t.Fatalf("request on a new connection after Refuse: code %d", resp.Code)
	}
	if n := h.seen.Load(); n != 3 {
		t.Fatalf("the handler saw %d requests, want the 3 from before Refuse", n)
	}

	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	h.answer(t)
	// Flush does not wait for answers not given yet (the stages' part):
	// it returns once what was queued is written.
	if err := s.Flush(short); err != nil {
		t.Fatalf("Flush with nothing queued: %v", err)
	}
	h.answer(t)
	h.answer(t)
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	for range 3 {
		select {
		case r := <-results:
			if r == nil || r.Code != remoting.Success {
				t.Fatalf("held request answered %+v, want SUCCESS", r)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a held request was not answered")
		}
	}
}

func TestFlushWaitsForAPeerToRead(t *testing.T) {
	// Answers larger than the socket buffers: gnet keeps the rest until
	// the peer reads.
	h := &holdHandler{held: make(chan held, 4), body: bytes.Repeat([]byte("b"), 32<<20)}
	s := startServer(t, 0, h)
	conn := rawConn(t, s.Addr())
	if _, err := conn.Write(mustFrame(t, 1, remoting.SerializeJSON, nil)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the request held", func() bool { return h.seen.Load() == 1 })
	h.answer(t)
	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	if err := s.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush while the peer reads nothing: %v, want a deadline error", err)
	}
	read := make(chan error, 1)
	go func() { // ends with the frame or the deadline
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := remoting.ReadFrame(conn, 64<<20)
		if err == nil && len(resp.Body) != len(h.body) {
			err = io.ErrShortBuffer
		}
		read <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush once the peer reads: %v", err)
	}
	if err := <-read; err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
}

func TestHangupHalfClosesAfterTheAnswersAndWaitsForThePeer(t *testing.T) {
	h := &holdHandler{held: make(chan held, 4)}
	s := startServer(t, 0, h)
	conn := rawConn(t, s.Addr())
	if _, err := conn.Write(mustFrame(t, 1, remoting.SerializeJSON, nil)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the request held", func() bool { return h.seen.Load() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Refuse(ctx, remoting.SystemBusy, "stopping"); err != nil {
		t.Fatal(err)
	}
	h.answer(t)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	hung := make(chan error, 1)
	go func() { hung <- s.Hangup(ctx) }() // ends with the peer's close or ctx
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := remoting.ReadFrame(conn, 0)
	if err != nil || resp.Opaque != 1 || resp.Code != remoting.Success {
		t.Fatalf("answer before the half-close: %+v, %v", resp, err)
	}
	if _, err := remoting.ReadFrame(conn, 0); !errors.Is(err, io.EOF) {
		t.Fatalf("after the answers: %v, want end of file", err)
	}
	// The peer may still send: it is read and dropped, not answered.
	if _, err := conn.Write(mustFrame(t, 2, remoting.SerializeJSON, nil)); err != nil {
		t.Fatal(err)
	}
	// A connection opened now is closed at once.
	late := rawConn(t, s.Addr())
	_ = late.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := late.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a connection opened during the hangup: %v, want end of file", err)
	}
	select {
	case err := <-hung:
		t.Fatalf("Hangup returned %v before the peer closed", err)
	case <-time.After(50 * time.Millisecond):
	}
	_ = conn.Close()
	select {
	case err := <-hung:
		if err != nil {
			t.Fatalf("Hangup: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Hangup did not return after the peer closed")
	}
	if n := h.seen.Load(); n != 1 {
		t.Fatalf("the handler saw %d requests, want 1", n)
	}
}
