package netloop

// TLS against plaintext, over loopback through the remoting Client and a
// permissive port (both transports on the same server) with the echo
// handler: one op is one request answered.
//
//	go test ./netloop -run '^$' -bench 'Transport|Handshake' -benchmem
//
// The ratios (TLS ops/s over plaintext ops/s) are in docs/benchmarks.md.

import (
	"bytes"
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// transports are the two ways a client talks to a permissive port.
var transports = []struct {
	name string
	tls  func(testing.TB) *tls.Config
}{
	{"plain", func(testing.TB) *tls.Config { return nil }},
	{"tls", clientTLS},
}

// BenchmarkTransportSync measures one request at a time.
func BenchmarkTransportSync(b *testing.B) {
	for _, tr := range transports {
		for _, size := range []int{128, 4 << 10} {
			b.Run(tr.name+"/"+sizeLabel(size), func(b *testing.B) {
				s := startTLSServer(b, Config{TLS: serverTLS(b, TLSPermissive)}, newEchoHandler())
				c := dial(b, s.Addr(), remoting.ClientOptions{TLS: tr.tls(b)})
				body := bytes.Repeat([]byte{'x'}, size)
				ctx := context.Background()
				b.SetBytes(int64(2 * size))
				b.ReportAllocs()
				for b.Loop() {
					req := remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "T", "queueId": "0"}, body)
					if _, err := c.Invoke(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkTransportWindow keeps a window of requests in flight on one
// connection (an async producer).
func BenchmarkTransportWindow(b *testing.B) {
	const window = 64
	for _, tr := range transports {
		for _, size := range []int{128, 4 << 10} {
			b.Run(tr.name+"/"+sizeLabel(size), func(b *testing.B) {
				s := startTLSServer(b, Config{TLS: serverTLS(b, TLSPermissive)}, newEchoHandler())
				c := dial(b, s.Addr(), remoting.ClientOptions{TLS: tr.tls(b)})
				body := bytes.Repeat([]byte{'x'}, size)
				slots := make(chan struct{}, window)
				errs := make(chan error, 1)
				done := func(_ *remoting.Command, err error) {
					if err != nil {
						select {
						case errs <- err:
						default:
						}
					}
					<-slots
				}
				b.SetBytes(int64(2 * size))
				b.ReportAllocs()
				for b.Loop() {
					slots <- struct{}{}
					req := remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "T", "queueId": "0"}, body)
					if err := c.Go(req, 10*time.Second, done); err != nil {
						b.Fatal(err)
					}
				}
				for range window {
					slots <- struct{}{}
				}
				select {
				case err := <-errs:
					b.Fatal(err)
				default:
				}
			})
		}
	}
}

// BenchmarkTransportConnect opens a new connection per op, sends one
// request and closes it: with TLS, handshakes per second (ECDSA P-256,
// TLS 1.3 with Go's default key exchange).
func BenchmarkTransportConnect(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) {
			s := startTLSServer(b, Config{TLS: serverTLS(b, TLSPermissive)}, quietEcho{newEchoHandler()})
			cfg := tr.tls(b)
			if cfg != nil {
				cfg.ClientSessionCache = nil // a full handshake each time
			}
			ctx := context.Background()
			for b.Loop() {
				c, err := remoting.Dial(ctx, s.Addr(), remoting.ClientOptions{TLS: cfg})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Invoke(ctx, remoting.NewRequest(remoting.HeartBeat, nil, nil)); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "conns/s")
		})
	}
}

// quietEcho is the echo handler without the record of opens and closes
// (which holds 64).
type quietEcho struct{ *echoHandler }

func (quietEcho) OnOpen(*Conn)         {}
func (quietEcho) OnClose(*Conn, error) {}

func sizeLabel(n int) string {
	if n >= 1<<10 {
		return sizeName(n)
	}
	return "128B"
}
