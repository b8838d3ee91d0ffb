package remoting_test

// The Client's signing hook and TLS against raw peers (remotingtest) that
// verify what they receive with netloop/auth.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/remotingtest"
)

// signer signs with the given account.
func signer(ak, sk string) func(*remoting.Command, []remoting.Field) []remoting.Field {
	return auth.Credentials{AccessKey: ak, SecretKey: sk}.Signer()
}

// extReq is a request whose header an ExtWriter writes, as the producer's
// sends are.
type extReq struct {
	topic string
	queue int64
	props []byte
}

func (e *extReq) WriteExt(w *remoting.ExtEncoder) {
	w.String("b", e.topic)
	w.Int("e", e.queue)
	w.Bytes("i", e.props)
}

func dial(t *testing.T, addr string, opts remoting.ClientOptions) *remoting.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// sendAll sends one request of each kind the client has: Invoke with a
// map header, Go and GoTransient with an Ext header, InvokeOneway; in
// both header encodings. It returns the requests as the caller holds
// them afterwards.
func sendAll(t *testing.T, c *remoting.Client) []*remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var sent []*remoting.Command
	for _, ser := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		m := remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TBW102"}, nil)
		m.Serialize = ser
		if resp, err := c.Invoke(ctx, m); err != nil || resp.Code != remoting.Success {
			t.Fatalf("invoke: %v %v", resp, err)
		}
		x := &remoting.Command{Code: remoting.SendMessageV2, Language: "GO", Version: 317, Serialize: ser,
			Ext: &extReq{topic: "orders", queue: 3, props: []byte("UNIQ_KEY\x01abc\x02")}, Body: []byte("body")}
		done := make(chan error, 2)
		if err := c.Go(x, 5*time.Second, func(_ *remoting.Command, err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		y := &remoting.Command{Code: remoting.SendMessageV2, Language: "GO", Version: 479, Serialize: ser,
			Ext: &extReq{topic: "t2", queue: 0}, Body: []byte("other")}
		if err := c.GoTransient(y, 5*time.Second, func(_ *remoting.Command, err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		o := remoting.NewRequest(remoting.UnregisterClient, map[string]string{"clientID": "x"}, []byte("{}"))
		o.Serialize = ser
		if err := c.InvokeOneway(o); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, m, x, y, o)
	}
	return sent
}

func TestClientSignsEveryRequest(t *testing.T) {
	p := remotingtest.Start(t, remotingtest.Options{Secrets: map[string]string{"alice": "s3cret-1"}})
	c := dial(t, p.Addr(), remoting.ClientOptions{Sign: signer("alice", "s3cret-1")})
	sent := sendAll(t, c)
	got := p.WaitN(t, len(sent), 5*time.Second)
	remotingtest.CheckSigned(t, got, "alice", false)
	// The Ext fields reached the wire and were signed with the rest.
	for _, r := range got {
		if r.Code == remoting.SendMessageV2 && r.Fields["b"] == "orders" && (r.Fields["e"] != "3" || r.Fields["i"] != "UNIQ_KEY\x01abc\x02") {
			t.Errorf("Ext fields on the wire: %v", r.Fields)
		}
	}
	// The caller's commands are left as they were.
	for _, cmd := range sent {
		if _, ok := cmd.ExtFields[auth.FieldSignature]; ok || cmd.Field(auth.FieldAccessKey) != "" {
			t.Errorf("the caller's request %d was changed: %v", cmd.Code, cmd.ExtFields)
		}
		if cmd.Code == remoting.SendMessageV2 && (cmd.Ext == nil || len(cmd.ExtFields) != 0) {
			t.Errorf("the caller's Ext request was changed: %+v", cmd)
		}
	}
}

func TestClientSignatureChecks(t *testing.T) {
	tests := []struct {
		name         string
		sign         func(*remoting.Command, []remoting.Field) []remoting.Field
		signed, good bool
	}{
		{"unsigned", nil, false, false},
		{"wrong secret", signer("alice", "not-it"), true, false},
		{"unknown key", signer("mallory", "s3cret-1"), true, false},
		{"right key", signer("alice", "s3cret-1"), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := remotingtest.Start(t, remotingtest.Options{Secrets: map[string]string{"alice": "s3cret-1"}})
			c := dial(t, p.Addr(), remoting.ClientOptions{Sign: tt.sign})
			got := p.WaitN(t, len(sendAll(t, c)), 5*time.Second)
			for _, r := range got {
				if r.Signed != tt.signed || r.Verified != tt.good {
					t.Errorf("request %d: signed %v verified %v, want %v %v", r.Code, r.Signed, r.Verified, tt.signed, tt.good)
				}
			}
		})
	}
}

func TestClientTLS(t *testing.T) {
	cert := remotingtest.SelfSigned(t)
	other := remotingtest.SelfSigned(t, "broker.example")
	tests := []struct {
		name    string
		server  remotingtest.Cert
		client  *tls.Config
		wantErr string // "" : the client works over TLS
	}{
		{"trusted", cert, &tls.Config{RootCAs: cert.Pool}, ""},
		{"insecure", cert, &tls.Config{InsecureSkipVerify: true}, ""},
		{"unknown authority", cert, &tls.Config{}, "unknown authority"},
		{"other name", other, &tls.Config{RootCAs: other.Pool}, "127.0.0.1"},
		{"TLS 1.1 only", cert, &tls.Config{RootCAs: cert.Pool, MaxVersion: tls.VersionTLS11}, "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := remotingtest.Start(t, remotingtest.Options{TLS: tt.server.ServerConfig(),
				Secrets: map[string]string{"alice": "s3cret-1"}})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := remoting.Dial(ctx, p.Addr(), remoting.ClientOptions{TLS: tt.client, Sign: signer("alice", "s3cret-1")})
			if tt.wantErr != "" {
				if err == nil {
					c.Close()
					t.Fatal("dial succeeded")
				}
				if !strings.Contains(err.Error(), "TLS handshake") || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("dial: %v; want a TLS handshake error naming %q", err, tt.wantErr)
				}
				var verr *tls.CertificateVerificationError
				if tt.name == "unknown authority" && !errors.As(err, &verr) {
					t.Fatalf("dial: %v is not a certificate verification error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if st, ok := c.TLS(); !ok || st.Version < tls.VersionTLS12 {
				t.Fatalf("TLS state %v %x", ok, st.Version)
			}
			remotingtest.CheckSigned(t, p.WaitN(t, len(sendAll(t, c)), 5*time.Second), "alice", true)
		})
	}
}

// A TLS client against a plaintext RocketMQ port fails its handshake
// instead of waiting.
func TestClientTLSAgainstPlaintext(t *testing.T) {
	p := remotingtest.Start(t, remotingtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, p.Addr(), remoting.ClientOptions{TLS: &tls.Config{InsecureSkipVerify: true}})
	if err == nil {
		c.Close()
		t.Fatal("a TLS dial of a plaintext port succeeded")
	}
	if !strings.Contains(err.Error(), "TLS handshake") {
		t.Fatalf("dial: %v", err)
	}
}

// silentListener accepts connections and never writes; with handshake it
// completes the TLS handshake first and then never reads. It stops when
// the test ends.
func silentListener(t *testing.T, handshake *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				if handshake != nil {
					tc := tls.Server(c, handshake)
					if tc.Handshake() != nil {
						return
					}
				}
				<-stop
			}()
		}
	}()
	t.Cleanup(func() {
		close(stop)
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// The handshake has a deadline: the context's, or WriteTimeout when the
// context has none.
func TestClientTLSHandshakeBounded(t *testing.T) {
	addr := silentListener(t, nil)
	cfg := &tls.Config{InsecureSkipVerify: true}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{TLS: cfg}); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial with a context deadline: %v, want the deadline", err)
	}
	done := make(chan error, 1)
	go func() {
		c, err := remoting.Dial(context.Background(), addr, remoting.ClientOptions{TLS: cfg, WriteTimeout: 100 * time.Millisecond})
		if c != nil {
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("dial without a context deadline: %v, want the WriteTimeout deadline", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a handshake with no answer was not bounded by WriteTimeout")
	}
}

// Over TLS a peer that stops reading still cannot hold a write past
// WriteTimeout: the connection is closed and its calls fail.
func TestClientTLSWriteTimeout(t *testing.T) {
	cert := remotingtest.SelfSigned(t)
	addr := silentListener(t, cert.ServerConfig())
	c := dial(t, addr, remoting.ClientOptions{TLS: &tls.Config{RootCAs: cert.Pool}, WriteTimeout: 100 * time.Millisecond,
		MaxQueuedBytes: 64 << 20})
	body := make([]byte, 1<<20)
	var failed error
	for i := 0; i < 64 && failed == nil; i++ {
		failed = c.InvokeOneway(remoting.NewRequest(remoting.SendMessage, nil, body))
		select {
		case <-c.Done():
			failed = c.Err()
		default:
		}
	}
	select {
	case <-c.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the connection outlived its write deadline")
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "write") {
		t.Fatalf("connection ended with %v, want a write error", err)
	}
	var verr x509.UnknownAuthorityError
	if errors.As(c.Err(), &verr) {
		t.Fatal("the handshake, not the write, failed")
	}
}
