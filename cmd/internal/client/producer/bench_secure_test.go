package producer_test

// What signing and TLS cost the producer: the send benchmarks against the
// instant broker (which ignores signatures) unsigned and signed, in
// plaintext and over TLS, side by side.

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"

	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/netloop/remoting/remotingtest"
)

// secureVariants are the four combinations, by name.
func secureVariants(b *testing.B) []struct {
	name string
	mk   func(b *testing.B, opts ...producer.Option) (*producer.Producer, string)
} {
	cert := remotingtest.SelfSigned(b)
	srv := cert.ServerConfig()
	plain := func(b *testing.B, opts ...producer.Option) (*producer.Producer, string) {
		return benchProducerOn(b, startInstant(b, "BenchTopic"), opts...)
	}
	overTLS := func(b *testing.B, opts ...producer.Option) (*producer.Producer, string) {
		s := startInstantWith(b, "BenchTopic", func(c net.Conn) net.Conn { return tls.Server(c, srv) })
		return benchProducerOn(b, s, append(opts, producer.WithTLS(&tls.Config{RootCAs: cert.Pool}))...)
	}
	signed := func(mk func(*testing.B, ...producer.Option) (*producer.Producer, string)) func(*testing.B, ...producer.Option) (*producer.Producer, string) {
		return func(b *testing.B, opts ...producer.Option) (*producer.Producer, string) {
			return mk(b, append(opts, producer.WithCredentials(alice))...)
		}
	}
	return []struct {
		name string
		mk   func(b *testing.B, opts ...producer.Option) (*producer.Producer, string)
	}{{"plain", plain}, {"signed", signed(plain)}, {"tls", overTLS}, {"tls-signed", signed(overTLS)}}
}

// BenchmarkSendSecured is BenchmarkSend (sync, one goroutine) for each
// variant.
func BenchmarkSendSecured(b *testing.B) {
	for _, v := range secureVariants(b) {
		b.Run(v.name, func(b *testing.B) {
			p, topic := v.mk(b)
			ctx := context.Background()
			b.ReportAllocs()
			start := cpuTime(b)
			for b.Loop() {
				if _, err := p.Send(ctx, producer.NewMessage(topic, benchBody)); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, start)
		})
	}
}

// BenchmarkSendAsyncSecured is BenchmarkSendAsync/plain (256 in flight)
// for each variant.
func BenchmarkSendAsyncSecured(b *testing.B) {
	for _, v := range secureVariants(b) {
		b.Run(v.name, func(b *testing.B) {
			p, topic := v.mk(b, producer.WithMaxInflight(256, 64<<20))
			ctx := context.Background()
			var wg sync.WaitGroup
			var failed error
			var once sync.Once
			cb := func(_ *producer.SendResult, err error) {
				if err != nil {
					once.Do(func() { failed = err })
				}
				wg.Done()
			}
			b.ReportAllocs()
			start := cpuTime(b)
			for b.Loop() {
				wg.Add(1)
				if err := p.SendAsync(ctx, producer.NewMessage(topic, benchBody), cb); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
			reportCPU(b, start)
			if failed != nil {
				b.Fatal(failed)
			}
		})
	}
}
