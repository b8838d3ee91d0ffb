package producer_test

// Client-only benchmarks: the producer against an "instant" fake broker that
// answers every send with a prebuilt response frame (only the opaque
// patched), without decoding the request or allocating, so that what the
// benchmarks measure (ns/op, allocs/op) is the producer's own cost.

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// instantBroker is a name server and a broker on one listener: route
// lookups get a route naming the listener itself, send requests in the
// binary header encoding a canned SUCCESS, anything else an empty SUCCESS.
type instantBroker struct {
	*tcpServer
	topic string
	// sendResp is the answer to a send, as a complete frame; opaqueAt is
	// where its opaque sits.
	sendResp []byte
	opaqueAt int
}

// startInstant starts an instant broker serving topic with 8 queues.
func startInstant(tb testing.TB, topic string) *instantBroker {
	tb.Helper()
	return startInstantWith(tb, topic, nil)
}

// startInstantWith is startInstant with each connection wrapped by wrap
// first (nil: none), e.g. in a TLS server.
func startInstantWith(tb testing.TB, topic string, wrap func(net.Conn) net.Conn) *instantBroker {
	tb.Helper()
	s := &instantBroker{tcpServer: listenTCP(tb), topic: topic}
	resp := &remoting.Command{Code: remoting.Success, Language: "JAVA", Version: remoting.BrokerVersion,
		Flag: remoting.FlagResponse, Opaque: -1, Serialize: remoting.SerializeRocketMQ,
		ExtFields: map[string]string{
			"msgId": "7F00000100002A9F0000000000000001", "queueId": "3", "queueOffset": "123456",
			"transactionId": "tx", "MSG_REGION": "DefaultRegion", "TRACE_ON": "true",
		}}
	var err error
	if s.sendResp, err = remoting.EncodeFrame(resp); err != nil {
		tb.Fatal(err)
	}
	s.opaqueAt = 8 + 5 // length, header word, then code (2), language (1), version (2)
	if int32(binary.BigEndian.Uint32(s.sendResp[s.opaqueAt:])) != -1 {
		tb.Fatal("opaque not where expected in the binary header")
	}
	serve := s.serve
	if wrap != nil {
		serve = func(c net.Conn) { s.serve(wrap(c)) }
	}
	s.start(tb, serve)
	return s
}

// serve answers the frames of one connection; answers are written when no
// more input is buffered, so pipelined requests share writes.
func (s *instantBroker) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 256<<10)
	var frame, out []byte
	lenBuf := make([]byte, 4)
	for {
		if _, err := io.ReadFull(br, lenBuf); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(lenBuf))
		if n < 4 || n > remoting.DefaultMaxFrame {
			return
		}
		if cap(frame) < n {
			frame = make([]byte, n)
		}
		frame = frame[:n]
		if _, err := io.ReadFull(br, frame); err != nil {
			return
		}
		word := binary.BigEndian.Uint32(frame)
		if word>>24 == uint32(remoting.SerializeRocketMQ) && n >= 4+13 &&
			int32(int16(binary.BigEndian.Uint16(frame[4:]))) == remoting.SendMessageV2 {
			out = append(out, s.sendResp...)
			copy(out[len(out)-len(s.sendResp)+s.opaqueAt:], frame[4+5:4+9])
		} else if resp := s.control(frame); resp != nil {
			b, err := remoting.EncodeFrame(resp)
			if err != nil {
				return
			}
			out = append(out, b...)
		}
		if br.Buffered() == 0 && len(out) > 0 {
			if _, err := conn.Write(out); err != nil {
				return
			}
			out = out[:0]
		}
	}
}

// control answers a request that is not a send (routes, heartbeats), or
// returns nil for a oneway request.
func (s *instantBroker) control(frame []byte) *remoting.Command {
	req, err := remoting.DecodeFrame(frame)
	if err != nil || req.IsOneway() {
		return nil
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	if req.Code == remoting.GetRouteInfoByTopic {
		if req.Field("topic") != s.topic {
			resp.Code = remoting.TopicNotExist
			return resp
		}
		resp.Body, _ = json.Marshal(map[string]any{
			"queueDatas": []map[string]any{{"brokerName": "b1", "readQueueNums": 8, "writeQueueNums": 8, "perm": 6}},
			"brokerDatas": []map[string]any{{"cluster": "C", "brokerName": "b1",
				"brokerAddrs": map[string]string{"0": s.addr()}}},
		})
	}
	return resp
}

// benchProducer starts a producer on an instant broker and warms it up
// (route cached, connection up).
func benchProducer(b *testing.B, opts ...producer.Option) (*producer.Producer, string) {
	b.Helper()
	return benchProducerOn(b, startInstant(b, "BenchTopic"), opts...)
}

// benchProducerOn is benchProducer on the instant broker s.
func benchProducerOn(b *testing.B, s *instantBroker, opts ...producer.Option) (*producer.Producer, string) {
	b.Helper()
	topic := s.topic
	p, err := producer.New(append([]producer.Option{producer.WithNameServers(s.addr()), producer.WithGroup("bench"),
		producer.WithInstanceName("bench-" + strconv.Itoa(b.N) + "-" + b.Name())}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	if _, err := p.Send(context.Background(), producer.NewMessage(topic, []byte("warm"))); err != nil {
		b.Fatal(err)
	}
	return p, topic
}

// cpuTime returns the CPU time (user + system) the process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU per op since start (the instant
// broker's share included: it reads each request and copies a canned
// answer).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N)/1e3, "cpu-µs/op")
}

// benchBody is the 256-byte body of the comparison with NATS.
var benchBody = make([]byte, 256)

// BenchmarkSend measures a sync send from one goroutine: the round trip
// through the producer, the loopback socket and the instant broker.
func BenchmarkSend(b *testing.B) {
	p, topic := benchProducer(b)
	ctx := context.Background()
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		if _, err := p.Send(ctx, producer.NewMessage(topic, benchBody)); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkSendAsync measures async sends with at most 256 in flight (the
// window of bench:compare:nats), each result delivered to its callback.
func BenchmarkSendAsync(b *testing.B) {
	for _, timer := range []bool{false, true} {
		name := "plain"
		if timer {
			name = "timer"
		}
		b.Run(name, func(b *testing.B) {
			p, topic := benchProducer(b, producer.WithMaxInflight(256, 64<<20))
			ctx := context.Background()
			var (
				wg      sync.WaitGroup
				errOnce sync.Once
				failed  error
			)
			cb := func(_ *producer.SendResult, err error) {
				if err != nil {
					errOnce.Do(func() { failed = err })
				}
				wg.Done()
			}
			b.ReportAllocs()
			start := cpuTime(b)
			for b.Loop() {
				m := producer.NewMessage(topic, benchBody)
				if timer {
					m.WithDelay(3600e9)
				}
				wg.Add(1)
				if err := p.SendAsync(ctx, m, cb); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
			reportCPU(b, start)
			if failed != nil {
				b.Fatal(errors.Join(failed))
			}
		})
	}
}

// BenchmarkSendParallel measures sync sends from 64 goroutines sharing one
// producer (and one connection).
func BenchmarkSendParallel(b *testing.B) {
	p, topic := benchProducer(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(32) // 64 senders on 2 cores
	start := cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Send(ctx, producer.NewMessage(topic, benchBody)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportCPU(b, start)
}
