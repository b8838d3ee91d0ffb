package netloop

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// burstHandler answers a request by sending, from several goroutines at
// once, frames of mixed sizes (some larger than a socket buffer, so that
// direct writes come up short and the event loop takes over).
type burstHandler struct {
	senders, frames int
	wg              sync.WaitGroup
}

func (h *burstHandler) OnOpen(*Conn)         {}
func (h *burstHandler) OnClose(*Conn, error) {}
func (h *burstHandler) OnCommand(c *Conn, cmd *remoting.Command) {
	for g := range h.senders {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			var o Outbox
			for i := range h.frames {
				resp := remoting.NewResponse(cmd, remoting.Success, "")
				resp.SetField("g", strconv.Itoa(g))
				resp.SetField("i", strconv.Itoa(i))
				resp.Body = burstBody(g, i)
				var err error
				if i%3 == 2 { // some through an Outbox, flushed every other frame
					err = o.Send(c, resp)
					if i%2 == 0 {
						o.Flush()
					}
				} else {
					err = c.Send(resp)
				}
				if err != nil {
					panic(err)
				}
			}
			o.Flush()
		}()
	}
}

// burstBody is frame i of sender g: mostly small, every 7th 3 MiB.
func burstBody(g, i int) []byte {
	n := 16 + (g*31+i*17)%512
	if i%7 == 3 {
		n = 3 << 20
	}
	b := make([]byte, n)
	for k := range b {
		b[k] = byte(g*7 + i + k)
	}
	return b
}

// TestConcurrentSendsStayOrderedAndWhole has several goroutines send at
// once to a client that reads slowly at first: every frame must arrive
// whole and each sender's frames in order, whether they were written
// directly, through an Outbox, or by the event loop after a short write.
func TestConcurrentSendsStayOrderedAndWhole(t *testing.T) {
	h := &burstHandler{senders: 4, frames: 40}
	s := startServer(t, 0, h)
	conn := rawConn(t, s.Addr())
	if _, err := conn.Write(mustFrame(t, 1, remoting.SerializeJSON, nil)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the socket fill up before reading
	next := make([]int, h.senders)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for range h.senders * h.frames {
		resp, err := remoting.ReadFrame(conn, 8<<20)
		if err != nil {
			t.Fatalf("after %v frames: %v", next, err)
		}
		g, _ := strconv.Atoi(resp.Field("g"))
		i, _ := strconv.Atoi(resp.Field("i"))
		if g < 0 || g >= h.senders || i != next[g] {
			t.Fatalf("frame %d of sender %d, want %d (all: %v)", i, g, next[g], next)
		}
		if !bytes.Equal(resp.Body, burstBody(g, i)) {
			t.Fatalf("frame %d of sender %d: body of %d bytes differs", i, g, len(resp.Body))
		}
		next[g]++
	}
	h.wg.Wait()
}

// collectWrites records what the server writes through a FakeConn.
type collectWrites struct {
	mu     sync.Mutex
	writes [][]byte
}

func (w *collectWrites) add(b []byte) {
	w.mu.Lock()
	w.writes = append(w.writes, append([]byte(nil), b...))
	w.mu.Unlock()
}

func (w *collectWrites) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

// countFrames counts the frames in b.
func countFrames(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for len(b) > 0 {
		size := int(binary.BigEndian.Uint32(b)) + 4
		if size > len(b) {
			t.Fatalf("frame of %d bytes cut at %d", size, len(b))
		}
		b = b[size:]
		n++
	}
	return n
}

func TestOutboxWritesEachConnectionOnceOnFlush(t *testing.T) {
	s := NewServer(Config{Name: "test"}, newEchoHandler())
	var w1, w2 collectWrites
	f1 := NewFakeConn(s, -1, w1.add) // no descriptor: writes go through the loop
	f2 := NewFakeConn(s, -1, w2.add)
	defer f1.Shutdown()
	defer f2.Shutdown()
	var o Outbox
	for i := range 5 {
		for _, c := range []*Conn{f1.NetConn(), f2.NetConn()} {
			if err := o.Send(c, remoting.NewResponse(&remoting.Command{Opaque: int32(i)}, remoting.Success, "")); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(20 * time.Millisecond)
	if w1.count()+w2.count() != 0 {
		t.Fatalf("written before Flush: %d and %d writes", w1.count(), w2.count())
	}
	o.Flush()
	eventually(t, "both connections written", func() bool { return w1.count() == 1 && w2.count() == 1 })
	for _, w := range []*collectWrites{&w1, &w2} {
		if n := countFrames(t, w.writes[0]); n != 5 {
			t.Errorf("one write of %d frames, want 5", n)
		}
	}
}

// TestDirectWriteBypassesTheLoop gives a fake connection a real socket:
// frames go to it directly; what the socket cannot take goes through the
// event loop, and so does everything after, until a loop flush found
// gnet's buffer empty.
func TestDirectWriteBypassesTheLoop(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Skipf("socketpair: %v", err)
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	s := NewServer(Config{Name: "test"}, newEchoHandler())
	var w collectWrites
	f := NewFakeConn(s, fds[0], w.add)
	defer f.Shutdown()
	c := f.NetConn()
	small := remoting.NewResponse(&remoting.Command{Opaque: 1}, remoting.Success, "")
	if err := c.Send(small); err != nil {
		t.Fatal(err)
	}
	want, _ := remoting.EncodeFrame(small)
	got := make([]byte, len(want))
	if _, err := syscall.Read(fds[1], got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("socket got %q (%v), want %q", got, err, want)
	}
	if w.count() != 0 {
		t.Fatalf("%d writes through the loop, want none", w.count())
	}
	big := remoting.NewResponse(&remoting.Command{Opaque: 2}, remoting.Success, "")
	big.Body = make([]byte, 8<<20) // far more than the socket buffer
	f.SetOutbound(1)               // gnet keeps what the loop wrote
	if err := c.Send(big); err != nil {
		t.Fatal(err)
	}
	eventually(t, "rest of the big frame through the loop", func() bool { return w.count() == 1 })
	if err := c.Send(small); err != nil {
		t.Fatal(err)
	}
	eventually(t, "next frame through the loop too", func() bool { return w.count() == 2 })
	f.SetOutbound(0)
	if err := c.Send(small); err != nil { // this flush finds gnet's buffer empty
		t.Fatal(err)
	}
	eventually(t, "third write through the loop", func() bool { return w.count() == 3 })
	sent := drainSocket(t, fds[1])
	if err := c.Send(small); err != nil {
		t.Fatal(err)
	}
	if w.count() != 3 {
		t.Fatalf("%d loop writes after gnet's buffer emptied, want 3", w.count())
	}
	// The socket got the small frame, the head of the big one, and now the
	// last small frame directly; the loop got the rest in between.
	stream := append(sent, drainSocket(t, fds[1])...)
	if len(stream) <= len(want) || !bytes.Equal(stream[len(stream)-len(want):], want) {
		t.Fatalf("socket stream of %d bytes does not end with the direct frame", len(stream))
	}
	total := len(stream) - len(want) + len(w.writes[0]) + len(w.writes[1]) + len(w.writes[2])
	bigFrame, _ := remoting.EncodeFrame(big)
	if wantTotal := len(bigFrame) + 2*len(want); total != wantTotal {
		t.Fatalf("%d bytes written in all, want %d", total, wantTotal)
	}
}

// drainSocket reads everything buffered on the non-blocking fd.
func drainSocket(t *testing.T, fd int) []byte {
	t.Helper()
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	var out []byte
	buf := make([]byte, 1<<16)
	for {
		n, err := syscall.Read(fd, buf)
		if n > 0 {
			out = append(out, buf[:n]...)
			continue
		}
		if err == syscall.EAGAIN || err == nil {
			return out
		}
		t.Fatal(err)
	}
}
