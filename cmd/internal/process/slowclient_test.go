package process_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestStuckPullerIsBounded has a raw client pipeline 20,000 pulls of 4 MiB
// messages and never read an answer. The broker's buffered output and heap
// stay bounded (before the caps, the same client took the heap from 41 MiB
// to 1 GiB in 3 s, still growing), an official Go producer and push
// consumer on another connection are served meanwhile, the stuck
// connection's requests are refused with SYSTEM_BUSY, and it is closed
// once it stayed above the soft cap for the stall timeout, which frees
// what it held.
func TestStuckPullerIsBounded(t *testing.T) {
	// Not parallel: it measures the process's heap, which other tests' brokers would share.
	const (
		softCap   = netloop.DefaultMaxOutput
		stall     = 2 * time.Second
		bodySize  = 4 << 20
		bodies    = 8
		pulls     = 20000
		others    = 20
		maxBuffer = 2 * softCap // the soft cap, the reads under way when it was crossed, the refusals
		// maxGrowth bounds the live heap's growth: maxBuffer, the answers being
		// encoded and the 4 MiB reads under way, more of which overlap on a
		// loaded machine (231 MiB seen). Unbounded buffering would grow with
		// the 20,000 pulls of 32 MiB answers, far past it.
		maxGrowth = 8 * maxBuffer
	)
	n := processtest.Start(t, processtest.Options{Metrics: true, Mutate: func(c *pipeline.Config) {
		c.SlowConnTimeout = stall
	}})
	big, small := processtest.Unique("big"), processtest.Unique("small")
	processtest.CreateTopic(t, n, big, 1)
	processtest.CreateTopic(t, n, small, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := remoting.Dial(ctx, n.BrokerAddr(), remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	body := make([]byte, bodySize)
	for range bodies {
		_, _ = rand.Read(body) // incompressible: every answer is as large as its message
		if resp, err := rc.Invoke(ctx, processtest.SendRequest(big, 0, body, nil)); err != nil || resp.Code != remoting.Success {
			t.Fatalf("send a 4 MiB message: %v %+v", err, resp)
		}
	}
	p := processtest.Producer(t, n.NamesrvAddr())
	if _, err := p.SendSync(ctx, primitive.NewMessage(small, []byte("warm-up"))); err != nil {
		t.Fatal(err)
	}
	_, got := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("g"), small, "*")
	if !got.WaitFor(1, 30*time.Second) {
		t.Fatal("consumer did not start")
	}
	// The heap is measured live (after a collection): what the garbage
	// collector has not yet taken back depends on how large the heap of
	// the whole test process already is, not on the broker.
	var ms runtime.MemStats
	live := func() int64 {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	base := live()

	var frames []byte
	for i := range pulls {
		req := processtest.PullRequest("stuck", big, 0, int64(i%bodies), 32)
		req.Opaque = int32(i + 1)
		frames, _ = remoting.AppendFrame(frames, req)
	}
	stuck := dialSmallReceiveBuffer(t, n.BrokerAddr())
	var writer sync.WaitGroup
	writer.Add(1)
	go func() { // ends when everything is written or the broker closed the connection
		defer writer.Done()
		_, _ = stuck.Write(frames)
	}()
	defer writer.Wait()
	defer stuck.Close()

	// While the stuck client holds the broker's output: others are served.
	served := make(chan error, 1)
	go func() {
		for i := range others {
			sctx, c := context.WithTimeout(ctx, 5*time.Second)
			_, err := p.SendSync(sctx, primitive.NewMessage(small, []byte(fmt.Sprintf("while-stuck-%d", i))))
			c()
			if err != nil {
				served <- fmt.Errorf("send %d while a client is stuck: %w", i, err)
				return
			}
		}
		if !got.WaitFor(1+others, 15*time.Second) {
			served <- fmt.Errorf("consumer got %d of %d messages while a client is stuck", got.Len()-1, others)
			return
		}
		served <- nil
	}()
	var peakHeap, peakBuf int64
	closed, deadline := false, time.Now().Add(stall+20*time.Second)
	var othersErr error
	othersDone := false
	for !(closed && othersDone) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: stuck connection closed %v, others done %v", stall+20*time.Second, closed, othersDone)
		}
		peakHeap = max(peakHeap, live())
		if peakHeap-base > 4*maxGrowth { // unbounded: stop before the machine runs out
			t.Fatalf("heap grew by %d MiB under the stuck client (buffered output %d MiB)", (peakHeap-base)>>20,
				n.Broker().NetStats().OutputBuffered>>20)
		}
		st := n.Broker().NetStats()
		if !closed {
			peakBuf = max(peakBuf, st.OutputBuffered)
		}
		closed = st.SlowClosed > 0
		select {
		case othersErr = <-served:
			othersDone = true
			if othersErr != nil {
				t.Fatal(othersErr)
			}
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Logf("live heap %d MiB before the stuck client, peak %d MiB (growth %d MiB); buffered output peak %d MiB",
		base>>20, peakHeap>>20, (peakHeap-base)>>20, peakBuf>>20)
	if peakBuf > maxBuffer {
		t.Errorf("buffered output peaked at %d MiB, want at most %d MiB", peakBuf>>20, maxBuffer>>20)
	}
	if peakHeap-base > maxGrowth {
		t.Errorf("heap grew by %d MiB under the stuck client, want at most %d MiB", (peakHeap-base)>>20, maxGrowth>>20)
	}
	if busy := scrape(t, n.MetricsAddr(), `wheelmq_requests_refused_total{code="2"}`); busy == 0 {
		t.Error("no request of the stuck client was refused with SYSTEM_BUSY")
	}
	if v := scrape(t, n.MetricsAddr(), `wheelmq_net_slow_closed_total{server="broker"}`); v != 1 {
		t.Errorf("wheelmq_net_slow_closed_total = %v, want 1", v)
	}
	if err := readUntilClosed(stuck, 10*time.Second); err != nil {
		t.Errorf("stuck connection: %v", err)
	}
	if b := n.Broker().NetStats().OutputBuffered; b > 1<<20 {
		t.Errorf("%d bytes still buffered after the stuck connection was closed", b)
	}
}

// dialSmallReceiveBuffer connects with a 16 KiB receive buffer, set before
// the handshake (set later, Linux stalls the transfer), so that what the
// client does not read stays on the broker's side.
func dialSmallReceiveBuffer(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10)
		})
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// readUntilClosed reads conn until the broker's close shows (EOF or a
// reset), failing when it is still open after d.
func readUntilClosed(conn net.Conn, d time.Duration) error {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 1<<20)
	for {
		if _, err := conn.Read(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("still open after %v", d)
			}
			return nil
		}
	}
}
