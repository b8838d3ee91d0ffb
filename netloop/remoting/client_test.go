package remoting

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/portres"
)

// peer is the server side of one test connection.
type peer struct {
	conn net.Conn
	mu   sync.Mutex // serializes writes
}

// send writes cmd as one frame.
func (p *peer) send(t *testing.T, cmd *Command) {
	frame, err := EncodeFrame(cmd)
	if err != nil {
		t.Errorf("peer encode: %v", err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.conn.Write(frame)
}

// servePeer listens on 127.0.0.1:0, accepts one connection and runs fn on
// it. It returns the address to dial.
func servePeer(t *testing.T, fn func(p *peer)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		fn(&peer{conn: conn})
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// echoPeer answers every request with code Success, echoing the body and
// ext fields, after the delay in ext field "delayMs".
func echoPeer(t *testing.T) func(p *peer) {
	return func(p *peer) {
		var wg sync.WaitGroup
		defer wg.Wait()
		for {
			req, err := ReadFrame(p.conn, 0)
			if err != nil {
				return
			}
			if req.IsOneway() {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if ms, _ := strconv.Atoi(req.Field("delayMs")); ms > 0 {
					time.Sleep(time.Duration(ms) * time.Millisecond)
				}
				resp := NewResponse(req, Success, "")
				resp.ExtFields = req.ExtFields
				resp.Body = req.Body
				p.send(t, resp)
			}()
		}
	}
}

func dialT(t *testing.T, addr string, opts ClientOptions) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestClientInvokeConcurrentOutOfOrder(t *testing.T) {
	c := dialT(t, servePeer(t, echoPeer(t)), ClientOptions{})
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Later requests answer sooner, so responses come out of order.
			req := NewRequest(SendMessage, map[string]string{
				"i": strconv.Itoa(i), "delayMs": strconv.Itoa((n - i) % 7 * 5)}, []byte("body-"+strconv.Itoa(i)))
			if i%2 == 1 {
				req.Serialize = SerializeRocketMQ
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := c.Invoke(ctx, req)
			if err != nil {
				errs <- err
				return
			}
			if resp.Opaque != req.Opaque || resp.Field("i") != strconv.Itoa(i) || string(resp.Body) != "body-"+strconv.Itoa(i) {
				errs <- errors.New("response for another request: " + resp.Field("i"))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestClientInvokeTimeoutThenReuse(t *testing.T) {
	c := dialT(t, servePeer(t, echoPeer(t)), ClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.Invoke(ctx, NewRequest(HeartBeat, map[string]string{"delayMs": "200"}, nil))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want DeadlineExceeded", err)
	}
	// The late answer is dropped and the connection stays usable.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	resp, err := c.Invoke(ctx2, NewRequest(HeartBeat, map[string]string{"delayMs": "250"}, nil))
	if err != nil || resp.Code != Success {
		t.Fatalf("second invoke: %+v, %v", resp, err)
	}
}

func TestClientPeerCloseFailsPending(t *testing.T) {
	got := make(chan struct{})
	addr := servePeer(t, func(p *peer) {
		if _, err := ReadFrame(p.conn, 0); err == nil {
			close(got)
		}
		// Return without answering: the connection closes.
	})
	c := dialT(t, addr, ClientOptions{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.Invoke(context.Background(), NewRequest(PullMessage, nil, nil))
		errc <- err
	}()
	<-got
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("err %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pending Invoke did not fail")
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed")
	}
	if c.Err() == nil {
		t.Fatal("Err() is nil after close")
	}
	if _, err := c.Invoke(context.Background(), NewRequest(PullMessage, nil, nil)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Invoke after close: %v, want ErrClosed", err)
	}
	if err := c.InvokeOneway(NewRequest(PullMessage, nil, nil)); !errors.Is(err, ErrClosed) {
		t.Fatalf("InvokeOneway after close: %v, want ErrClosed", err)
	}
}

func TestClientCloseFailsPending(t *testing.T) {
	c := dialT(t, servePeer(t, echoPeer(t)), ClientOptions{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.Invoke(context.Background(), NewRequest(PullMessage, map[string]string{"delayMs": "300"}, nil))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("err %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestClientOnewayAndRaw(t *testing.T) {
	seen := make(chan *Command, 2)
	addr := servePeer(t, func(p *peer) {
		for {
			cmd, err := ReadFrame(p.conn, 0)
			if err != nil {
				return
			}
			seen <- cmd
		}
	})
	c := dialT(t, addr, ClientOptions{})
	if err := c.InvokeOneway(NewRequest(UpdateConsumerOffset, map[string]string{"a": "b"}, nil)); err != nil {
		t.Fatal(err)
	}
	raw, _ := EncodeFrame(&Command{Code: 77, Language: "GO", Opaque: 5})
	if err := c.WriteRaw(raw); err != nil {
		t.Fatal(err)
	}
	first, second := <-seen, <-seen
	if first.Code != UpdateConsumerOffset || !first.IsOneway() || first.Opaque == 0 {
		t.Fatalf("oneway arrived as %+v", first)
	}
	if second.Code != 77 || second.Opaque != 5 {
		t.Fatalf("raw arrived as %+v", second)
	}
}

func TestClientServesServerRequests(t *testing.T) {
	answers := make(chan *Command, 4)
	addr := servePeer(t, func(p *peer) {
		// Three server-initiated requests: answered, unanswered (nil
		// handler result) and oneway; then a marker that is answered.
		p.send(t, &Command{Code: NotifyConsumerIDsChanged, Opaque: 100, ExtFields: map[string]string{"answer": "yes"}})
		p.send(t, &Command{Code: NotifyConsumerIDsChanged, Opaque: 101, ExtFields: map[string]string{"answer": "no"}})
		p.send(t, &Command{Code: NotifyConsumerIDsChanged, Opaque: 102, Flag: FlagOneway, ExtFields: map[string]string{"answer": "yes"}})
		p.send(t, &Command{Code: CheckTransactionState, Opaque: 103, ExtFields: map[string]string{"answer": "yes"}})
		for {
			cmd, err := ReadFrame(p.conn, 0)
			if err != nil {
				return
			}
			answers <- cmd
		}
	})
	dialT(t, addr, ClientOptions{OnRequest: func(req *Command) *Command {
		if req.Field("answer") != "yes" {
			return nil
		}
		return &Command{Code: Success, Remark: strconv.Itoa(int(req.Code))}
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
	for _, op := range []int32{100, 103} {
		a := got[op]
		if a == nil || !a.IsResponse() || a.Code != Success {
			t.Fatalf("answer for opaque %d: %+v", op, a)
		}
	}
	select {
	case a := <-answers:
		t.Fatalf("unexpected answer %+v", a)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestClientMaxFrame(t *testing.T) {
	addr := servePeer(t, func(p *peer) {
		p.send(t, &Command{Code: Success, Flag: FlagResponse, Body: bytes.Repeat([]byte{1}, 2048)})
		_, _ = ReadFrame(p.conn, 0) // until the client hangs up
	})
	c := dialT(t, addr, ClientOptions{MaxFrame: 1024})
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("oversized frame did not close the client")
	}
	if !errors.Is(c.Err(), ErrFrameTooLarge) {
		t.Fatalf("Err() = %v, want ErrFrameTooLarge", c.Err())
	}
}

func TestDialError(t *testing.T) {
	addr := portres.Hold(t) // nobody listens there
	if _, err := Dial(context.Background(), addr, ClientOptions{}); err == nil {
		t.Fatal("Dial to a closed port succeeded")
	}
}

func TestClientInvokeExpiredContextKeepsConnection(t *testing.T) {
	c := dialT(t, servePeer(t, echoPeer(t)), ClientOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Invoke(ctx, NewRequest(HeartBeat, nil, nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want Canceled", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if _, err := c.Invoke(ctx2, NewRequest(HeartBeat, nil, nil)); err != nil {
		t.Fatalf("connection lost after an expired context: %v", err)
	}
}

// goResult is what a Go callback received.
type goResult struct {
	resp *Command
	err  error
}

func TestClientGoPipelinesAndMatchesByOpaque(t *testing.T) {
	c := dialT(t, servePeer(t, echoPeer(t)), ClientOptions{})
	const n = 200
	results := make(chan goResult, n)
	sent := make(map[int32]string, n)
	for i := range n {
		req := NewRequest(SendMessage, map[string]string{"i": strconv.Itoa(i), "delayMs": strconv.Itoa(i % 3)}, nil)
		req.Serialize = SerializeRocketMQ
		if err := c.Go(req, 5*time.Second, func(resp *Command, err error) { results <- goResult{resp, err} }); err != nil {
			t.Fatalf("go %d: %v", i, err)
		}
		sent[req.Opaque] = strconv.Itoa(i)
	}
	for range n {
		r := <-results
		if r.err != nil {
			t.Fatalf("response error: %v", r.err)
		}
		if want, ok := sent[r.resp.Opaque]; !ok || r.resp.Field("i") != want {
			t.Fatalf("opaque %d answered field i=%q, want %q", r.resp.Opaque, r.resp.Field("i"), want)
		}
		delete(sent, r.resp.Opaque)
	}
	if c.Pending() != 0 {
		t.Fatalf("%d calls still pending", c.Pending())
	}
}

func TestClientGoTimeout(t *testing.T) {
	c := dialT(t, servePeer(t, echoPeer(t)), ClientOptions{})
	results := make(chan goResult, 1)
	req := NewRequest(HeartBeat, map[string]string{"delayMs": "300"}, nil)
	if err := c.Go(req, 20*time.Millisecond, func(resp *Command, err error) { results <- goResult{resp, err} }); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-results:
		if !errors.Is(r.err, ErrTimeout) || !errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want ErrTimeout and DeadlineExceeded", r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("timeout callback never ran")
	}
	// The late answer is dropped, the callback is not called twice, and the
	// connection stays usable.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, NewRequest(HeartBeat, map[string]string{"delayMs": "400"}, nil))
	if err != nil || resp.Code != Success {
		t.Fatalf("invoke after timeout: %+v, %v", resp, err)
	}
	select {
	case r := <-results:
		t.Fatalf("callback called twice: %+v", r)
	default:
	}
}

func TestClientCloseFailsGoCallbacks(t *testing.T) {
	before := runtime.NumGoroutine()
	addr := servePeer(t, func(p *peer) { _, _ = io.Copy(io.Discard, p.conn) }) // never answers
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan goResult, 10)
	for range 10 {
		if err := c.Go(NewRequest(PullMessage, nil, nil), time.Minute, func(resp *Command, err error) {
			results <- goResult{resp, err}
		}); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	for range 10 {
		if r := <-results; !errors.Is(r.err, ErrClosed) {
			t.Fatalf("err %v, want ErrClosed", r.err)
		}
	}
	if err := c.Go(NewRequest(PullMessage, nil, nil), time.Second, func(*Command, error) {
		t.Error("callback of a refused request ran")
	}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Go after Close: %v, want ErrClosed", err)
	}
	waitGoroutines(t, before+2) // the peer's goroutines end with the test
}

// gatedConn counts writes and holds the first one until gate is closed.
type gatedConn struct {
	net.Conn
	gate   chan struct{}
	once   sync.Once
	writes atomic.Int32
}

// open opens the gate once.
func (g *gatedConn) open() { g.once.Do(func() { close(g.gate) }) }

func (g *gatedConn) Write(b []byte) (int, error) {
	if g.writes.Add(1) == 1 {
		<-g.gate
	}
	return g.Conn.Write(b)
}

func TestClientCoalescesWrites(t *testing.T) {
	const n = 200
	got := make(chan int, 1)
	addr := servePeer(t, func(p *peer) {
		count := 0
		for count < n {
			if _, err := ReadFrame(p.conn, 0); err != nil {
				break
			}
			count++
		}
		got <- count
	})
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	gc := &gatedConn{Conn: raw, gate: make(chan struct{})}
	t.Cleanup(gc.open) // before the peer's cleanup, even when the test fails
	c := newClient(gc, addr, ClientOptions{})
	defer c.Close()
	probe := func() *Command {
		return NewRequest(UpdateConsumerOffset, map[string]string{"k": "v"}, []byte("0123456789"))
	}
	// The first sender writes its frame itself and hangs in the gate; the
	// others find the socket busy and leave their frames to it.
	first := make(chan error, 1)
	go func() { first <- c.InvokeOneway(probe()) }()
	waitWrites(t, gc, 1)
	for range n - 1 {
		if err := c.InvokeOneway(probe()); err != nil {
			t.Fatal(err)
		}
	}
	gc.open()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	select {
	case count := <-got:
		if count != n {
			t.Fatalf("peer read %d frames, want %d", count, n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("peer did not receive the frames")
	}
	if w := gc.writes.Load(); w != 2 {
		t.Fatalf("%d frames took %d writes, want 2 (the first frame, then the rest together)", n, w)
	}
}

// waitWrites waits until gc has seen n writes.
func waitWrites(t *testing.T, gc *gatedConn, n int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for gc.writes.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes, want %d", gc.writes.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitGoroutines waits until at most n goroutines run.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestClientQueueBoundGivesBackPressure(t *testing.T) {
	got := make(chan int, 1)
	addr := servePeer(t, func(p *peer) {
		count := 0
		for {
			if _, err := ReadFrame(p.conn, 0); err != nil {
				break
			}
			count++
		}
		got <- count
	})
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	gc := &gatedConn{Conn: raw, gate: make(chan struct{})}
	t.Cleanup(gc.open) // before the peer's cleanup, even when the test fails
	c := newClient(gc, addr, ClientOptions{MaxQueuedBytes: 1024, WriteTimeout: 50 * time.Millisecond})
	body := bytes.Repeat([]byte("b"), 300)
	// The first frame's sender hangs in the gate, writing; the next frames
	// fill the queue to its bound.
	first := make(chan error, 1)
	go func() { first <- c.InvokeOneway(NewRequest(UpdateConsumerOffset, nil, body)) }()
	waitWrites(t, gc, 1)
	sent := 1
	for {
		err := c.InvokeOneway(NewRequest(UpdateConsumerOffset, nil, body))
		if err != nil {
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("oneway %d: %v, want ErrTimeout", sent, err)
			}
			break
		}
		sent++
		if sent > 100 {
			t.Fatal("queue bound never reached")
		}
	}
	if sent < 2 || sent > 6 {
		t.Fatalf("%d frames of ~330 bytes accepted with a 1024-byte bound", sent)
	}
	// A request's deadline also bounds its wait for room: either Go refuses
	// it, or (when its timer fires first) its callback gets the timeout.
	results := make(chan goResult, 1)
	err = c.Go(NewRequest(HeartBeat, nil, body), 20*time.Millisecond, func(r *Command, err error) {
		results <- goResult{r, err}
	})
	if err == nil {
		err = (<-results).err
	}
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Go on a full queue: %v, want ErrTimeout", err)
	}
	gc.open()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := <-got; n > sent {
		t.Fatalf("peer read %d frames, only %d were accepted", n, sent)
	}
	select {
	case r := <-results:
		t.Fatalf("callback ran twice, or for a refused request: %+v", r)
	default:
	}
}
