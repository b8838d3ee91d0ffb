package netloop

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func TestServerAddrResolvesPortZero(t *testing.T) {
	a := startServer(t, 0, newEchoHandler())
	b := startServer(t, 0, newEchoHandler())
	for _, s := range []*Server{a, b} {
		host, port, err := net.SplitHostPort(s.Addr())
		if err != nil || host != "127.0.0.1" || port == "0" {
			t.Fatalf("Addr() = %q (%v)", s.Addr(), err)
		}
	}
	if a.Addr() == b.Addr() {
		t.Fatalf("two servers on %s", a.Addr())
	}
	// The address is really the listener: a second bind fails.
	c := NewServer(Config{Name: "dup", Addr: a.Addr(), NumEventLoop: 1}, newEchoHandler())
	if err := c.Start(); err == nil {
		_ = c.Stop(context.Background())
		t.Fatalf("second server bound %s", a.Addr())
	}
}

func TestServerEchoBothSerializations(t *testing.T) {
	s := startServer(t, 0, newEchoHandler())
	c := dial(t, s.Addr(), remoting.ClientOptions{})
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		req := remoting.NewRequest(remoting.PullMessage, map[string]string{"topic": "T", "queueId": "3"}, []byte("payload"))
		req.Serialize = st
		resp := invoke(t, c, req)
		if resp.Code != remoting.Success || resp.Serialize != st || resp.Field("queueId") != "3" || string(resp.Body) != "payload" {
			t.Fatalf("%v: response %+v", st, resp)
		}
	}
	eventually(t, "frame counters", func() bool {
		st := s.Stats()
		return st.FramesIn == 2 && st.FramesOut == 2 && st.Conns == 1 && st.BadFrames == 0
	})
}

// TestServerByteCounters: bytes in are the frames read, bytes out the
// frames written, and connections are counted.
func TestServerByteCounters(t *testing.T) {
	s := startServer(t, 0, newEchoHandler())
	conn := rawConn(t, s.Addr())
	in := append(mustFrame(t, 1, remoting.SerializeJSON, []byte("abc")), mustFrame(t, 2, remoting.SerializeRocketMQ, nil)...)
	if _, err := conn.Write(in); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	out := 0
	for range 2 {
		var l [4]byte
		if _, err := io.ReadFull(conn, l[:]); err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, io.LimitReader(conn, int64(binary.BigEndian.Uint32(l[:]))))
		if err != nil {
			t.Fatal(err)
		}
		out += 4 + int(n)
	}
	eventually(t, "byte counters", func() bool {
		st := s.Stats()
		return st.BytesIn == int64(len(in)) && st.BytesOut == int64(out) && st.FramesOut == 2 && st.Accepted == 1 && st.Conns == 1
	})
}

func TestServerFramingVariants(t *testing.T) {
	tests := []struct {
		name  string
		write func(t *testing.T, conn net.Conn, stream []byte)
	}{
		{"many frames in one write", func(t *testing.T, conn net.Conn, stream []byte) {
			if _, err := conn.Write(stream); err != nil {
				t.Fatal(err)
			}
		}},
		{"byte by byte", func(t *testing.T, conn net.Conn, stream []byte) {
			for i := range stream {
				if _, err := conn.Write(stream[i : i+1]); err != nil {
					t.Fatal(err)
				}
				if i%16 == 0 {
					time.Sleep(50 * time.Microsecond)
				}
			}
		}},
		{"odd chunks across frame boundaries", func(t *testing.T, conn net.Conn, stream []byte) {
			for len(stream) > 0 {
				n := min(len(stream), 37)
				if _, err := conn.Write(stream[:n]); err != nil {
					t.Fatal(err)
				}
				stream = stream[n:]
				time.Sleep(100 * time.Microsecond)
			}
		}},
	}
	s := startServer(t, 0, newEchoHandler())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn := rawConn(t, s.Addr())
			var stream []byte
			const frames = 20
			for i := range int32(frames) {
				st := remoting.SerializeType(i % 2)
				stream = append(stream, mustFrame(t, i+1, st, bytes.Repeat([]byte{byte(i)}, int(i)*3))...)
			}
			tc.write(t, conn, stream)
			readResponses(t, conn, 1, frames)
		})
	}
}

func TestServerLargeFrames(t *testing.T) {
	s := startServer(t, 0, newEchoHandler())
	c := dial(t, s.Addr(), remoting.ClientOptions{})
	for _, size := range []int{64<<10 - 3, 1 << 20, 4 << 20} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(i * 7)
		}
		resp := invoke(t, c, remoting.NewRequest(remoting.SendMessage, nil, body))
		if !bytes.Equal(resp.Body, body) {
			t.Fatalf("body of %d bytes came back different", size)
		}
	}
}

// TestServerOversizeSendAnswered: a send past MaxFrame is answered
// MESSAGE_ILLEGAL with the limit, its bytes are skipped, and the
// connection goes on serving; a oneway one is not answered and closes it.
func TestServerOversizeSendAnswered(t *testing.T) {
	const maxFrame = 64 << 10
	h := newEchoHandler()
	s := startServer(t, maxFrame, h)
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		conn := rawConn(t, s.Addr())
		big := mustFrame(t, 7, st, make([]byte, 300<<10))
		next := mustFrame(t, 8, st, []byte("small"))
		wrote := make(chan error, 1)
		go func() { // more than the socket buffers take before the server reads
			_, err := conn.Write(append(big, next...))
			wrote <- err
		}()
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := remoting.ReadFrame(conn, 1<<20)
		if err != nil {
			t.Fatalf("serialize %d: no answer to the oversize send: %v", st, err)
		}
		if resp.Opaque != 7 || resp.Code != remoting.MessageIllegal || !strings.Contains(resp.Remark, "MAX: 65536") ||
			!strings.Contains(resp.Remark, strconv.Itoa(len(big)-4)) {
			t.Fatalf("serialize %d: answer %d %q (opaque %d), want 13 naming the limit and the size", st, resp.Code, resp.Remark, resp.Opaque)
		}
		resp, err = remoting.ReadFrame(conn, 1<<20)
		if err != nil || resp.Opaque != 8 || string(resp.Body) != "small" {
			t.Fatalf("serialize %d: the frame after the oversize one: %+v %v", st, resp, err)
		}
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Stats().Oversize; got != 2 {
		t.Fatalf("Oversize = %d, want 2", got)
	}
	oneway := remoting.NewRequest(remoting.SendMessage, nil, make([]byte, 100<<10))
	oneway.Flag |= remoting.FlagOneway
	b, err := remoting.EncodeFrame(oneway)
	if err != nil {
		t.Fatal(err)
	}
	conn := rawConn(t, s.Addr())
	go func() { _, _ = conn.Write(b) }()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := io.Copy(io.Discard, conn); n != 0 || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("oneway oversize send: read %d bytes, %v; want the connection closed without an answer", n, err)
	}
}

func TestServerBadInputClosesOnlyThatConnection(t *testing.T) {
	const maxFrame = 64 << 10
	frame := func(word uint32, rest []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(4+len(rest)))
		b = binary.BigEndian.AppendUint32(b, word)
		return append(b, rest...)
	}
	tests := []struct {
		name   string
		bytes  []byte
		want   error
		reason BadFrameReason
	}{
		{"garbage text", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), remoting.ErrFrameTooLarge, BadFrameTooLarge},
		{"length above MaxFrame", binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, maxFrame+1), 0x02000005),
			remoting.ErrFrameTooLarge, BadFrameTooLarge},
		{"oversize request not a send", frame(0, nil)[:0], remoting.ErrFrameTooLarge, BadFrameTooLarge},
		{"negative length", []byte{0x80, 0, 0, 0}, remoting.ErrMalformed, BadFrameTooShort},
		{"zero length", []byte{0, 0, 0, 0}, remoting.ErrMalformed, BadFrameTooShort},
		{"header length past frame", frame(0x00000064, []byte(`{"code":1}`)), remoting.ErrMalformed, BadFrameMalformed},
		{"unknown serialize type", frame(0x0200000a, []byte(`{"code":1}`)), remoting.ErrMalformed, BadFrameMalformed},
		{"truncated JSON header", frame(0x00000008, []byte(`{"code":`)), remoting.ErrMalformed, BadFrameMalformed},
		{"truncated binary header", frame(0x01000005, []byte{0, 10, 9, 1, 61}), remoting.ErrMalformed, BadFrameMalformed},
		{"good frame then garbage", append(mustFrame(t, 1, 0, nil), 0xff, 0xff, 0xff, 0xff), remoting.ErrMalformed, BadFrameTooShort},
	}
	// A heartbeat whose length field says more than MaxFrame: its header
	// decodes, but only sends are answered.
	hb, err := remoting.EncodeFrame(remoting.NewRequest(remoting.HeartBeat, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint32(hb, maxFrame+100)
	tests[2].bytes = hb
	h := newEchoHandler()
	s := startServer(t, maxFrame, h)
	good := dial(t, s.Addr(), remoting.ClientOptions{})
	<-h.opened
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Stats().BadFramesBy[tc.reason]
			bad := rawConn(t, s.Addr())
			badConn := <-h.opened
			if _, err := bad.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			// The bad connection is closed by the server: reads end, after
			// at most the answers to the good frames before the bad bytes.
			_ = bad.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.Copy(io.Discard, bad); errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("bad connection not closed: %v", err)
			}
			var ev closeEvent
			select {
			case ev = <-h.closed:
			case <-time.After(5 * time.Second):
				t.Fatal("no OnClose for the bad connection")
			}
			if ev.conn != badConn || !errors.Is(ev.err, ErrBadFrame) || !errors.Is(ev.err, tc.want) {
				t.Fatalf("OnClose(conn %d, %v), want conn %d and %v", ev.conn.ID(), ev.err, badConn.ID(), tc.want)
			}
			// The other connection keeps working.
			resp := invoke(t, good, remoting.NewRequest(remoting.HeartBeat, nil, nil))
			if resp.Code != remoting.Success {
				t.Fatalf("good connection: %+v", resp)
			}
			st := s.Stats()
			if st.BadFrames != int64(i+1) {
				t.Fatalf("BadFrames = %d, want %d", st.BadFrames, i+1)
			}
			if st.BadFramesBy[tc.reason] != before+1 {
				t.Fatalf("BadFramesBy[%v] = %d, want %d (%v)", tc.reason, st.BadFramesBy[tc.reason], before+1, st.BadFramesBy)
			}
		})
	}
}

func TestServerInitiatedRequestFromOtherGoroutine(t *testing.T) {
	h := newEchoHandler()
	s := startServer(t, 0, h)
	dial(t, s.Addr(), remoting.ClientOptions{OnRequest: func(req *remoting.Command) *remoting.Command {
		resp := &remoting.Command{Code: remoting.Success, Remark: "seen " + req.Field("group")}
		return resp
	}})
	conn := <-h.opened
	done := make(chan error)
	go func() { // not an event loop goroutine
		req := remoting.NewRequest(remoting.NotifyConsumerIDsChanged, map[string]string{"group": "G"}, nil)
		req.Opaque = 4242
		done <- conn.Send(req)
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-h.responses:
		if resp.Opaque != 4242 || resp.Remark != "seen G" {
			t.Fatalf("response %+v", resp)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no response to the server-initiated request")
	}
}

func TestServerOutOfOrderReplies(t *testing.T) {
	s := startServer(t, 0, newEchoHandler())
	c := dial(t, s.Addr(), remoting.ClientOptions{})
	const n = 30
	var wg sync.WaitGroup
	order := make(chan int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			delay := (n - i) * 10 // first asked, last answered
			req := remoting.NewRequest(remoting.PullMessage, map[string]string{"i": strconv.Itoa(i), "delayMs": strconv.Itoa(delay)}, nil)
			resp := invoke(t, c, req)
			if resp.Field("i") != strconv.Itoa(i) {
				t.Errorf("request %d got response for %s", i, resp.Field("i"))
			}
			order <- i
		}()
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	close(order)
	inversions, prev := 0, -1
	for i := range order {
		if i < prev {
			inversions++
		}
		prev = i
	}
	if inversions == 0 {
		t.Fatal("replies arrived in request order; the test did not exercise reordering")
	}
}

func TestConnLifecycle(t *testing.T) {
	h := newEchoHandler()
	s := startServer(t, 0, h)
	c := dial(t, s.Addr(), remoting.ClientOptions{})
	conn := <-h.opened
	if conn.ID() == 0 || conn.RemoteAddr() == "" || conn.LocalAddr() != s.Addr() {
		t.Fatalf("conn id %d remote %q local %q (server %s)", conn.ID(), conn.RemoteAddr(), conn.LocalAddr(), s.Addr())
	}
	if ap := conn.RemoteAddrPort(); !ap.Addr().Is4() || ap.String() != conn.RemoteAddr() {
		t.Fatalf("RemoteAddrPort() = %v, RemoteAddr() = %q", ap, conn.RemoteAddr())
	}
	// Context from many goroutines (race detector checks this).
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn.SetContext(i)
			_ = conn.Context()
		}()
	}
	wg.Wait()
	if _, ok := conn.Context().(int); !ok {
		t.Fatalf("Context() = %v", conn.Context())
	}

	// A handler-initiated close still delivers the answer first.
	resp := invoke(t, c, remoting.NewRequest(remoting.UnregisterClient, map[string]string{"close": "1"}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("response %+v", resp)
	}
	ev := <-h.closed
	if ev.conn != conn || ev.err != nil {
		t.Fatalf("OnClose(%d, %v)", ev.conn.ID(), ev.err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("client not closed")
	}
	if err := conn.Send(remoting.NewRequest(remoting.HeartBeat, nil, nil)); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("Send after close: %v", err)
	}
	if err := conn.Close(); err != nil {
		t.Fatalf("Close after close: %v", err)
	}
	eventually(t, "conns to drop to zero", func() bool { return s.Stats().Conns == 0 })
}

func TestClientCloseIsOrderly(t *testing.T) {
	h := newEchoHandler()
	s := startServer(t, 0, h)
	c := dial(t, s.Addr(), remoting.ClientOptions{})
	<-h.opened
	c.Close()
	ev := <-h.closed
	if ev.err != nil {
		t.Fatalf("OnClose err = %v, want nil", ev.err)
	}
	_ = s
}

func TestServerStopClosesConnections(t *testing.T) {
	h := newEchoHandler()
	s := NewServer(Config{Name: "stop", Addr: "127.0.0.1:0", NumEventLoop: 2}, h)
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	s = NewServer(Config{Name: "stop", Addr: "127.0.0.1:0", NumEventLoop: 2}, h)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); !errors.Is(err, ErrServerState) {
		t.Fatalf("second Start: %v", err)
	}
	clients := []*remoting.Client{
		dial(t, s.Addr(), remoting.ClientOptions{}),
		dial(t, s.Addr(), remoting.ClientOptions{}),
	}
	conns := []*Conn{<-h.opened, <-h.opened}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Stop took %v", d)
	}
	for range conns {
		<-h.closed
	}
	for _, c := range clients {
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("client still connected after Stop")
		}
	}
	for _, conn := range conns {
		if err := conn.Send(remoting.NewRequest(remoting.HeartBeat, nil, nil)); !errors.Is(err, ErrConnClosed) {
			t.Fatalf("Send after Stop: %v", err)
		}
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := s.Start(); !errors.Is(err, ErrServerState) {
		t.Fatalf("Start after Stop: %v", err)
	}
	if st := s.Stats(); st.Conns != 0 {
		t.Fatalf("Conns = %d after Stop", st.Conns)
	}
}

func TestServerStartError(t *testing.T) {
	s := NewServer(Config{Name: "bad", Addr: "256.0.0.1:0", NumEventLoop: 1}, newEchoHandler())
	if err := s.Start(); err == nil {
		_ = s.Stop(context.Background())
		t.Fatal("Start on an invalid address succeeded")
	}
}
