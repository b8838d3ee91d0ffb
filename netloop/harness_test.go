package netloop

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// echoHandler answers requests with Success, echoing ext fields and body.
// Ext field "delayMs" answers later from another goroutine; "close" closes
// the connection after answering. Responses (to server-initiated requests)
// go to responses.
type echoHandler struct {
	opened    chan *Conn
	responses chan *remoting.Command
	closed    chan closeEvent
}

// closeEvent is one OnClose call.
type closeEvent struct {
	conn *Conn
	err  error
}

func newEchoHandler() *echoHandler {
	return &echoHandler{
		opened:    make(chan *Conn, 64),
		responses: make(chan *remoting.Command, 64),
		closed:    make(chan closeEvent, 64),
	}
}

func (h *echoHandler) OnOpen(c *Conn) { h.opened <- c }

func (h *echoHandler) OnClose(c *Conn, err error) { h.closed <- closeEvent{c, err} }

func (h *echoHandler) OnCommand(c *Conn, cmd *remoting.Command) {
	if cmd.IsResponse() {
		h.responses <- cmd
		return
	}
	if cmd.IsOneway() {
		return
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	resp.ExtFields = cmd.ExtFields
	resp.Body = cmd.Body
	if ms, _ := strconv.Atoi(cmd.Field("delayMs")); ms > 0 {
		go func() {
			time.Sleep(time.Duration(ms) * time.Millisecond)
			_ = c.Send(resp)
		}()
		return
	}
	_ = c.Send(resp)
	if cmd.Field("close") != "" {
		_ = c.Close()
	}
}

// startServer starts a server on 127.0.0.1:0 with two event loops and
// stops it when the test ends.
func startServer(t testing.TB, maxFrame int, h Handler) *Server {
	t.Helper()
	s := NewServer(Config{Name: "test", Addr: "127.0.0.1:0", MaxFrame: maxFrame, NumEventLoop: 2}, h)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s
}

func dial(t testing.TB, addr string, opts remoting.ClientOptions) *remoting.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func invoke(t testing.TB, c *remoting.Client, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, req)
	if err != nil {
		t.Fatalf("Invoke code %d: %v", req.Code, err)
	}
	return resp
}

// rawConn dials addr with a plain TCP connection.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// mustFrame encodes a request with the given opaque.
func mustFrame(t *testing.T, opaque int32, st remoting.SerializeType, body []byte) []byte {
	t.Helper()
	c := remoting.NewRequest(remoting.SendMessage, map[string]string{"n": strconv.Itoa(int(opaque))}, body)
	c.Opaque, c.Serialize = opaque, st
	b, err := remoting.EncodeFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readResponses reads n frames from conn and checks their opaques are
// first, first+1, ...
func readResponses(t *testing.T, conn net.Conn, first int32, n int) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range n {
		resp, err := remoting.ReadFrame(conn, 0)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		want := first + int32(i)
		if !resp.IsResponse() || resp.Opaque != want || resp.Field("n") != strconv.Itoa(int(want)) {
			t.Fatalf("response %d: %+v, want opaque %d", i, resp, want)
		}
	}
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
