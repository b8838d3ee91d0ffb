package netloop

import (
	"bytes"
	"context"
	"strconv"
	"testing"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// BenchmarkRoundTrip measures one request/response over loopback through
// the remoting Client and the gnet server with a handler that answers on
// the event loop.
func BenchmarkRoundTrip(b *testing.B) {
	for _, size := range []int{0, 1 << 10, 64 << 10} {
		b.Run(sizeName(size), func(b *testing.B) {
			s := startServer(b, 0, newEchoHandler())
			c := dial(b, s.Addr(), remoting.ClientOptions{})
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

// BenchmarkRoundTripParallel runs concurrent invocations over one
// connection, as the Go client multiplexes producers on one socket.
func BenchmarkRoundTripParallel(b *testing.B) {
	s := startServer(b, 0, newEchoHandler())
	c := dial(b, s.Addr(), remoting.ClientOptions{})
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "T", "queueId": "0"}, []byte("hello"))
			if _, err := c.Invoke(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func sizeName(n int) string {
	switch {
	case n >= 1<<10:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return "empty"
}
