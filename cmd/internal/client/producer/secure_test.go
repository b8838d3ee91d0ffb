package producer_test

// The producer's credentials and TLS against a raw peer (remotingtest)
// that plays name server and broker in one port and verifies every
// request's signature: no server-side ACL needed.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/client/mqclient"
	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/remotingtest"
)

var secureSeq atomic.Int64

// secureInstance is an instance name of its own per producer.
func secureInstance() string { return fmt.Sprintf("secure-%d", secureSeq.Add(1)) }

var alice = auth.Credentials{AccessKey: "alice", SecretKey: "alice-secret-1"}

// sendEveryWay sends with each of the producer's modes and closes it (which
// unregisters the group).
func sendEveryWay(t *testing.T, p *producer.Producer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.Send(ctx, producer.NewMessage("orders", []byte("sync"))); err != nil {
		t.Fatalf("send: %v", err)
	}
	done := make(chan error, 1)
	if err := p.SendAsync(ctx, producer.NewMessage("orders", []byte("async")), func(_ *producer.SendResult, err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("async: %v", err)
	}
	if err := p.SendOneway(ctx, producer.NewMessage("orders", []byte("oneway")).WithTag("t")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SendBatch(ctx, producer.NewMessage("orders", []byte("b1")), producer.NewMessage("orders", []byte("b2"))); err != nil {
		t.Fatalf("batch: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// wantCodes fails unless got has every code.
func wantCodes(t *testing.T, got []remotingtest.Received, codes ...int32) {
	t.Helper()
	for _, code := range codes {
		found := false
		for _, r := range got {
			found = found || r.Code == code
		}
		if !found {
			t.Errorf("no request %d among %s", code, remotingtest.Codes(got))
		}
	}
}

func TestProducerSignsEveryRequest(t *testing.T) {
	cert := remotingtest.SelfSigned(t)
	tests := []struct {
		name string
		tls  *tls.Config // of the server; the client trusts cert
	}{
		{"plaintext", nil},
		{"TLS", cert.ServerConfig()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secrets := map[string]string{"alice": alice.SecretKey}
			broker := remotingtest.Start(t, remotingtest.Options{TLS: tt.tls, Secrets: secrets})
			ns := remotingtest.Start(t, remotingtest.Options{TLS: tt.tls, Secrets: secrets, RouteTo: broker.Addr()})
			opts := []producer.Option{producer.WithNameServers(ns.Addr()), producer.WithGroup("pg"),
				producer.WithInstanceName(secureInstance()), producer.WithCredentials(alice)}
			if tt.tls != nil {
				opts = append(opts, producer.WithTLS(&tls.Config{RootCAs: cert.Pool}))
			}
			p, err := producer.New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			sendEveryWay(t, p)
			got := broker.WaitFor(t, remoting.UnregisterClient, 10*time.Second)
			wantCodes(t, got, remoting.HeartBeat, remoting.SendMessageV2, remoting.SendBatchMessage, remoting.UnregisterClient)
			remotingtest.CheckSigned(t, got, "alice", tt.tls != nil)
			routes := ns.WaitFor(t, remoting.GetRouteInfoByTopic, 10*time.Second)
			remotingtest.CheckSigned(t, routes, "alice", tt.tls != nil)
		})
	}
}

// Without credentials nothing is signed: the check above can fail.
func TestProducerUnsignedByDefault(t *testing.T) {
	broker := remotingtest.Start(t, remotingtest.Options{Secrets: map[string]string{"alice": alice.SecretKey}})
	ns := remotingtest.Start(t, remotingtest.Options{RouteTo: broker.Addr()})
	p, err := producer.New(producer.WithNameServers(ns.Addr()), producer.WithInstanceName(secureInstance()))
	if err != nil {
		t.Fatal(err)
	}
	sendEveryWay(t, p)
	for _, r := range append(broker.WaitFor(t, remoting.UnregisterClient, 10*time.Second), ns.Received()...) {
		if r.Signed || r.AccessKey != "" {
			t.Errorf("request %d signed without credentials: %v", r.Code, r.Fields)
		}
	}
}

// A server certificate the producer does not trust fails the send with
// the verification error, and nothing reaches the peer.
func TestProducerTLSUntrusted(t *testing.T) {
	cert := remotingtest.SelfSigned(t)
	peer := remotingtest.Start(t, remotingtest.Options{TLS: cert.ServerConfig()})
	p, err := producer.New(producer.WithNameServers(peer.Addr()), producer.WithInstanceName(secureInstance()),
		producer.WithTLS(&tls.Config{}), producer.WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = p.Send(ctx, producer.NewMessage("orders", []byte("x")))
	var verr *tls.CertificateVerificationError
	if err == nil || !errors.As(err, &verr) {
		t.Fatalf("send: %v, want a certificate verification error", err)
	}
	if got := peer.Received(); len(got) != 0 {
		t.Fatalf("requests reached the peer: %s", remotingtest.Codes(got))
	}
}

// Producers of one client id share one instance, so they must share its
// identity and TLS: another identity is refused, never signed for.
func TestProducerSharedInstanceKeepsItsIdentity(t *testing.T) {
	peer := remotingtest.Start(t, remotingtest.Options{})
	name := secureInstance()
	p1, err := producer.New(producer.WithNameServers(peer.Addr()), producer.WithGroup("g1"), producer.WithInstanceName(name),
		producer.WithCredentials(alice))
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	bob := auth.Credentials{AccessKey: "bob", SecretKey: "bob-secret-2"}
	for _, o := range []producer.Option{producer.WithCredentials(bob), producer.WithTLS(&tls.Config{})} {
		opts := []producer.Option{producer.WithNameServers(peer.Addr()), producer.WithGroup("g2"), producer.WithInstanceName(name),
			producer.WithCredentials(alice), o}
		p2, err := producer.New(opts...)
		if err == nil {
			p2.Close()
			t.Fatal("a second identity or TLS setting joined the instance")
		}
		if !errors.Is(err, mqclient.ErrConfigConflict) || strings.Contains(err.Error(), "secret-") {
			t.Fatalf("conflict: %v", err)
		}
	}
	p3, err := producer.New(producer.WithNameServers(peer.Addr()), producer.WithGroup("g3"), producer.WithInstanceName(name),
		producer.WithCredentials(alice))
	if err != nil {
		t.Fatalf("same identity: %v", err)
	}
	p3.Close()
}
