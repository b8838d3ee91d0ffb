package remoting

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// silentPeer reads everything and never answers.
func silentPeer(p *peer) { _, _ = io.Copy(io.Discard, p.conn) }

// TestClientDeadlinesShareOneTimer checks the client's single deadline
// timer: a request registered after one with a far deadline still fails
// at its own (the timer is re-armed for the earlier deadline), no request
// fails before its deadline, and every timed-out call leaves the table.
func TestClientDeadlinesShareOneTimer(t *testing.T) {
	c := dialT(t, servePeer(t, silentPeer), ClientOptions{})
	type outcome struct {
		i       int
		err     error
		elapsed time.Duration
	}
	results := make(chan outcome, 8)
	timeouts := []time.Duration{time.Minute, 30 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond, 20 * time.Millisecond}
	for i, d := range timeouts {
		start := time.Now()
		if err := c.Go(NewRequest(HeartBeat, nil, nil), d, func(_ *Command, err error) {
			results <- outcome{i, err, time.Since(start)}
		}); err != nil {
			t.Fatal(err)
		}
	}
	for range len(timeouts) - 1 { // all but the one-minute request
		select {
		case r := <-results:
			if r.i == 0 {
				t.Fatal("the one-minute request timed out")
			}
			if !errors.Is(r.err, ErrTimeout) || !errors.Is(r.err, context.DeadlineExceeded) {
				t.Fatalf("request %d: %v, want ErrTimeout", r.i, r.err)
			}
			if !strings.Contains(r.err.Error(), "within "+timeouts[r.i].String()) {
				t.Fatalf("request %d: %v does not name its timeout %v", r.i, r.err, timeouts[r.i])
			}
			if r.elapsed < timeouts[r.i] {
				t.Fatalf("request %d failed after %v, before its timeout %v", r.i, r.elapsed, timeouts[r.i])
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a short deadline waited for the long one")
		}
	}
	if n := c.Pending(); n != 1 {
		t.Fatalf("%d calls pending, want the one-minute request only", n)
	}
	c.Close()
	if r := <-results; r.i != 0 || !errors.Is(r.err, ErrClosed) {
		t.Fatalf("after Close: request %d, %v; want request 0 with ErrClosed", r.i, r.err)
	}
}

// TestClientInvokeWithin covers InvokeWithin's three endings (answer, own
// timeout, context) with pooled waits reused between them: every answer
// must belong to its own request.
func TestClientInvokeWithin(t *testing.T) {
	c := dialT(t, servePeer(t, echoPeer(t)), ClientOptions{})
	const n = 60
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			delay, timeout := 0, 5*time.Second
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			switch i % 3 {
			case 1: // the answer comes after the request's own timeout
				delay, timeout = 200, 5*time.Millisecond
			case 2: // the answer comes after the context ended
				delay = 200
				var c2 context.CancelFunc
				ctx, c2 = context.WithTimeout(ctx, 5*time.Millisecond)
				defer c2()
			}
			req := NewRequest(SendMessage, map[string]string{"i": strconv.Itoa(i), "delayMs": strconv.Itoa(delay)}, []byte(strconv.Itoa(i)))
			resp, err := c.InvokeWithin(ctx, req, timeout)
			switch {
			case i%3 == 0 && (err != nil || resp.Field("i") != strconv.Itoa(i) || string(resp.Body) != strconv.Itoa(i)):
				errs <- errors.New("request " + strconv.Itoa(i) + ": wrong or no answer")
			case i%3 == 1 && !errors.Is(err, ErrTimeout):
				errs <- errors.New("request " + strconv.Itoa(i) + ": want ErrTimeout")
			case i%3 == 2 && (!errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout)):
				errs <- errors.New("request " + strconv.Itoa(i) + ": want the context's error")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if p := c.Pending(); p != 0 {
		t.Fatalf("%d calls pending", p)
	}
	// The late answers are dropped; the connection still works.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if resp, err := c.InvokeWithin(ctx, NewRequest(HeartBeat, map[string]string{"delayMs": "300"}, nil), time.Minute); err != nil || resp.Code != Success {
		t.Fatalf("after the late answers: %v, %v", resp, err)
	}
}
