// Package remotingtest is a raw RocketMQ remoting peer for tests of
// clients, in the style of net/http/httptest: a loopback listener,
// plaintext or TLS, that records every request it receives, checks its
// signature (netloop/auth.Verify) against the secrets it is given, and
// answers through a handler. It needs no broker, so a client's signing
// and TLS can be tested before (and apart from) the server side's checks.
//
// Broker is a handler that plays name server and broker in one port
// (routes of every topic lead back to the peer, sends are acknowledged,
// heartbeats answered), enough for a producer or the official Go client
// to run their whole protocol against it. SelfSigned makes the
// certificate of a TLS peer.
package remotingtest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Options configure a Peer.
type Options struct {
	// TLS, when set, makes the peer a TLS server with this configuration
	// (a plaintext client is then cut off at its first frame).
	TLS *tls.Config
	// Secrets are the secret keys by access key that signatures are
	// checked with.
	Secrets map[string]string
	// Handler answers a request (nil: no answer). Nil means Broker.
	Handler func(p *Peer, req *remoting.Command) *remoting.Command
	// RouteTo is the broker address of the routes Broker hands out
	// (default: the peer's own). A client heartbeats only brokers that are
	// not its name servers, so a test of heartbeats runs two peers, the
	// name server's routing to the broker's.
	RouteTo string
}

// Received is one request the peer read.
type Received struct {
	Code      int32
	Fields    map[string]string // the request's extFields, as received
	AccessKey string            // its AccessKey field ("": none)
	// Signed reports a Signature field; Verified that it is right for the
	// secret of AccessKey.
	Signed, Verified bool
	// TLS reports that the request came over TLS.
	TLS bool
}

// Peer is a running test peer. Its methods are safe for concurrent use.
type Peer struct {
	opts Options
	ln   net.Listener
	wg   sync.WaitGroup

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	received []Received
	failures []string // handshakes and frames that failed
	offset   int64
}

// Start starts a peer on 127.0.0.1 and stops it when the test ends.
func Start(t testing.TB, opts Options) *Peer {
	t.Helper()
	if opts.Handler == nil {
		opts.Handler = Broker
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Peer{opts: opts, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr returns the peer's "host:port".
func (p *Peer) Addr() string { return p.ln.Addr().String() }

// Close stops the peer: the listener and every connection are closed and
// their goroutines waited for.
func (p *Peer) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Received returns the requests read so far, in order of arrival.
func (p *Peer) Received() []Received {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.received)
}

// Failures returns what went wrong on the peer's connections so far
// (failed handshakes, unreadable frames); a connection the client closed
// is not a failure.
func (p *Peer) Failures() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.failures)
}

// WaitFor waits until a request with code arrived (within limit) and
// returns the requests read so far.
func (p *Peer) WaitFor(t testing.TB, code int32, limit time.Duration) []Received {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got := p.Received()
		for _, r := range got {
			if r.Code == code {
				return got
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request %d within %v; received %s; failures %v", code, limit, Codes(got), p.Failures())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitN waits until n requests arrived (within limit) and returns them.
func (p *Peer) WaitN(t testing.TB, n int, limit time.Duration) []Received {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got := p.Received()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests within %v, want %d; received %s; failures %v", len(got), limit, n, Codes(got), p.Failures())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// CheckSigned fails the test unless there is at least one request, every
// request carries accessKey and a valid signature, and (when overTLS)
// came over TLS.
func CheckSigned(t testing.TB, got []Received, accessKey string, overTLS bool) {
	t.Helper()
	if len(got) == 0 {
		t.Fatal("no request received")
	}
	for i, r := range got {
		if r.AccessKey != accessKey || !r.Verified || r.TLS != overTLS {
			t.Errorf("request %d (code %d): access key %q, signed %v, verified %v, TLS %v; want %q, verified, TLS %v",
				i, r.Code, r.AccessKey, r.Signed, r.Verified, r.TLS, accessKey, overTLS)
		}
	}
}

// Codes lists the codes of got, for messages.
func Codes(got []Received) string {
	var b strings.Builder
	for i, r := range got {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, r.Code)
	}
	return "[" + b.String() + "]"
}

func (p *Peer) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Peer) fail(format string, args ...any) {
	p.mu.Lock()
	p.failures = append(p.failures, fmt.Sprintf(format, args...))
	p.mu.Unlock()
}

// serve reads the requests of one connection and answers them in order.
func (p *Peer) serve(raw net.Conn) {
	defer p.wg.Done()
	defer func() {
		_ = raw.Close()
		p.mu.Lock()
		delete(p.conns, raw)
		p.mu.Unlock()
	}()
	conn := raw
	if p.opts.TLS != nil {
		tc := tls.Server(raw, p.opts.TLS)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			p.fail("TLS handshake from %s: %v", raw.RemoteAddr(), err)
			return
		}
		conn = tc
	}
	for {
		req, err := remoting.ReadFrame(conn, 0)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "reset") {
				p.fail("read from %s: %v", raw.RemoteAddr(), err)
			}
			return
		}
		if req.IsResponse() {
			continue
		}
		ak := req.Field(auth.FieldAccessKey)
		secret, known := p.opts.Secrets[ak]
		_, signed := req.ExtFields[auth.FieldSignature]
		p.mu.Lock()
		p.received = append(p.received, Received{Code: req.Code, Fields: req.ExtFields, AccessKey: ak,
			Signed: signed, Verified: signed && known && auth.Verify(req, secret), TLS: p.opts.TLS != nil})
		p.mu.Unlock()
		resp := p.opts.Handler(p, req)
		if resp == nil || req.IsOneway() {
			continue
		}
		resp.Opaque, resp.Flag = req.Opaque, resp.Flag|remoting.FlagResponse
		frame, err := remoting.EncodeFrame(resp)
		if err != nil {
			p.fail("encode answer to %d: %v", req.Code, err)
			return
		}
		if _, err := conn.Write(frame); err != nil {
			return
		}
	}
}

// Broker answers as a name server and broker in one port: the route of
// any topic is four queues on a broker at Options.RouteTo, sends
// are acknowledged with made-up offsets, heartbeats and everything else
// succeed with an empty body.
func Broker(p *Peer, req *remoting.Command) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	switch req.Code {
	case remoting.GetRouteInfoByTopic:
		to := p.opts.RouteTo
		if to == "" {
			to = p.Addr()
		}
		resp.Body = []byte(`{"queueDatas":[{"brokerName":"test","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],` +
			`"brokerDatas":[{"cluster":"test","brokerName":"test","brokerAddrs":{"0":"` + to + `"}}]}`)
	case remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage:
		p.mu.Lock()
		p.offset++
		off := p.offset
		p.mu.Unlock()
		q := req.Field("queueId")
		if q == "" {
			q = req.Field("e")
		}
		resp.SetField("msgId", fmt.Sprintf("7F00000100002A9F%016X", off))
		resp.SetField("queueId", q)
		resp.SetField("queueOffset", fmt.Sprint(off))
		resp.SetField("MSG_REGION", "DefaultRegion")
	}
	return resp
}
