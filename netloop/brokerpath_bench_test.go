package netloop_test

// In-process benchmarks of a broker's hot paths, frame in to response
// frame out, through the real pieces a wheelmq process assembles
// (actors/pipeline, netloop/router, a netloop.Server and its Conn) with the
// socket replaced by netloop.FakeConn: the benchmark goroutine plays the
// event loop that read the frames, and the server's writes land in memory.
// Everything that runs in the broker for a request is counted: the router
// on the "event loop", the stages (commitlog writer, dispatch, index, pull)
// and the response flush.
//
//	go test ./netloop -run '^$' -bench 'SendPath|PullPath' -benchmem
//
// One op of BenchmarkSendPath is one message sent and answered; one op of
// BenchmarkPullPath is one PULL_MESSAGE answered with up to msgs messages.

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/access"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/router"
	"github.com/wheelmq/wheelmq/storage/message"
)

const (
	benchTopic  = "BenchTopic"
	benchQueues = 8
	benchBody   = 256
)

// benchBroker is a broker's stages and router behind a netloop server that
// is fed by fake connections.
type benchBroker struct {
	pipe *pipeline.Pipeline
	srv  *netloop.Server
}

func newBenchBroker(tb testing.TB, flush writer.FlushMode) *benchBroker {
	return newBenchBrokerACL(tb, flush, nil)
}

// newBenchBrokerACL is newBenchBroker with an ACL (guard nil: none).
func newBenchBrokerACL(tb testing.TB, flush writer.FlushMode, guard *auth.Guard) *benchBroker {
	tb.Helper()
	cfg := pipeline.DefaultConfig()
	cfg.DataDir = tb.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.Flush = flush
	cfg.Logger = zerolog.Nop()
	cfg.WriterBatch = router.NewBatch
	pipe, err := pipeline.Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	core := broker.New(pipe)
	r := router.NewGuarded(core, guard)
	adv := netip.MustParseAddrPort("127.0.0.1:10911")
	core.Serve(adv, message.NewUniqKeyGenerator(adv.Addr(), 1, 1))
	bb := &benchBroker{pipe: pipe, srv: netloop.NewServer(netloop.Config{Name: "bench"}, r)}
	tb.Cleanup(func() {
		if err := pipe.Close(); err != nil {
			tb.Errorf("close pipeline: %v", err)
		}
	})
	return bb
}

// benchClient is one fake connection and what came back on it.
type benchClient struct {
	tb    testing.TB
	fc    *netloop.FakeConn
	got   chan int // frames per server write
	bad   atomic.Pointer[string]
	codes map[int32]bool // response codes that count as success
	timer *time.Timer
}

func (bb *benchBroker) client(tb testing.TB, ok ...int32) *benchClient {
	c := &benchClient{tb: tb, got: make(chan int, 1<<16), codes: map[int32]bool{remoting.Success: true},
		timer: time.NewTimer(time.Hour)}
	for _, code := range ok {
		c.codes[code] = true
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		tb.Fatal(err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		tb.Fatal(err)
	}
	c.fc = netloop.NewFakeConn(bb.srv, fds[0], nil)
	done := make(chan struct{})
	go c.read(fds[1], done)
	tb.Cleanup(func() {
		c.fc.Shutdown()
		_ = syscall.Shutdown(fds[0], syscall.SHUT_RDWR)
		<-done
		_ = syscall.Close(fds[0])
		_ = syscall.Close(fds[1])
	})
	return c
}

// read drains the client end of the socketpair, counting whole frames and
// checking their codes without decoding them (no allocation).
func (c *benchClient) read(fd int, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 8<<20)
	have := 0
	for {
		k, err := syscall.Read(fd, buf[have:])
		if err == syscall.EINTR {
			continue
		}
		if k <= 0 {
			return
		}
		have += k
		b, n := buf[:have], 0
		for len(b) >= 8 {
			size := int(binary.BigEndian.Uint32(b)) + 4
			if size > len(b) {
				break
			}
			if code, ok := responseCode(b[:size]); !ok || !c.codes[code] {
				if resp, err := remoting.DecodeFrame(b[4:size]); err == nil {
					c.fail(fmt.Sprintf("response code %d remark %q", resp.Code, resp.Remark))
				} else {
					c.fail(fmt.Sprintf("undecodable response: %v", err))
				}
			}
			n++
			b = b[size:]
		}
		have = copy(buf, b)
		if n > 0 {
			c.got <- n
		}
	}
}

func (c *benchClient) fail(msg string) { c.bad.CompareAndSwap(nil, &msg) }

// responseCode reads the code of an encoded response frame.
func responseCode(f []byte) (int32, bool) {
	if len(f) < 10 {
		return 0, false
	}
	if f[4] == byte(remoting.SerializeRocketMQ) {
		return int32(int16(binary.BigEndian.Uint16(f[8:]))), true
	}
	const prefix = `{"code":`
	h := f[8:]
	if len(h) < len(prefix) || string(h[:len(prefix)]) != prefix {
		return 0, false
	}
	var code int32
	i := len(prefix)
	for ; i < len(h) && h[i] >= '0' && h[i] <= '9'; i++ {
		code = code*10 + int32(h[i]-'0')
	}
	return code, i > len(prefix)
}

// roundTrip feeds frames (n of them) and waits for n responses.
func (c *benchClient) roundTrip(frames []byte, n int) {
	c.fc.Feed(frames)
	c.timer.Reset(10 * time.Second)
	for n > 0 {
		select {
		case k := <-c.got:
			n -= k
		case <-c.timer.C:
			c.tb.Fatalf("no answer within 10 s (%d missing)", n)
		}
	}
	c.timer.Stop()
	if msg := c.bad.Load(); msg != nil {
		c.tb.Fatal(*msg)
	}
}

func (c *benchClient) invoke(cmd *remoting.Command) {
	f, err := remoting.EncodeFrame(cmd)
	if err != nil {
		c.tb.Fatal(err)
	}
	c.roundTrip(f, 1)
}

func createBenchTopic(c *benchClient) {
	n := strconv.Itoa(benchQueues)
	c.invoke(remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": benchTopic, "readQueueNums": n, "writeQueueNums": n, "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
}

// sendFrame encodes the SEND_MESSAGE_V2 request the official Go client
// (JSON) or wheelmq's native producer (binary) sends for one message.
func sendFrame(tb testing.TB, st remoting.SerializeType, queueID int) []byte {
	return sendFrameAs(tb, st, queueID, auth.Credentials{})
}

// sendFrameAs is sendFrame signed with creds (empty: unsigned).
func sendFrameAs(tb testing.TB, st remoting.SerializeType, queueID int, creds auth.Credentials) []byte {
	props := message.AppendProperty(nil, message.PropUniqKey, fmt.Sprintf("7F000001%024X", queueID))
	props = message.AppendProperty(props, message.PropWait, "true")
	props = message.AppendProperty(props, message.PropTags, "TagA")
	cmd := remoting.NewRequest(remoting.SendMessageV2, map[string]string{
		"a": "bench_group", "b": benchTopic, "c": "TBW102", "d": "4", "e": strconv.Itoa(queueID), "f": "0",
		"g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0", "i": string(props), "j": "0", "k": "false",
		"m": "false", "n": "broker-a",
	}, make([]byte, benchBody))
	cmd.Opaque, cmd.Serialize = int32(queueID+1), st
	creds.Sign(cmd)
	f, err := remoting.EncodeFrame(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// sendFrames returns n send frames back to back, spread over the queues.
func sendFrames(tb testing.TB, st remoting.SerializeType, n int) []byte {
	var out []byte
	for i := range n {
		out = append(out, sendFrame(tb, st, i%benchQueues)...)
	}
	return out
}

// BenchmarkSendPath sends 256-byte messages through the whole send path:
// "sync" waits for each answer before sending the next (one producer),
// "window64" feeds 64 frames at once (a pipelining client, one read of
// the event loop) and waits for their 64 answers.
func BenchmarkSendPath(b *testing.B) {
	for _, flush := range []writer.FlushMode{writer.FlushAsync, writer.FlushSync} {
		for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
			for _, window := range []int{1, 64} {
				name := fmt.Sprintf("flush=%s/header=%s/window=%d", flush, st, window)
				b.Run(name, func(b *testing.B) { benchSend(b, flush, st, window) })
			}
		}
	}
}

func benchSend(b *testing.B, flush writer.FlushMode, st remoting.SerializeType, window int) {
	bb := newBenchBroker(b, flush)
	c := bb.client(b)
	createBenchTopic(c)
	// One ring of frames; a round takes the next window of them.
	ring := sendFrames(b, st, benchQueues*window)
	frameLen := len(ring) / (benchQueues * window)
	for range 200 { // warm up: pools, mailboxes, maps
		c.roundTrip(ring[:window*frameLen], window)
	}
	b.SetBytes(benchBody)
	b.ReportAllocs()
	b.ResetTimer()
	at := 0
	for i := 0; i < b.N; i += window {
		n := min(window, b.N-i)
		if at+n > benchQueues*window {
			at = 0
		}
		c.roundTrip(ring[at*frameLen:(at+n)*frameLen], n)
		at += n
	}
	b.StopTimer()
}

// BenchmarkSendPathSigned compares unsigned sends to a broker without an
// ACL with signed ones to a broker with one (the signature checked on the
// hot path, fastsend.go), async flush, both header types; the goal is
// signed >= 0.95x unsigned:
//
//	go test ./netloop -run '^$' -bench SendPathSigned -benchmem -count 5
func BenchmarkSendPathSigned(b *testing.B) {
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		for _, window := range []int{1, 64} {
			for _, acl := range []bool{false, true} {
				name := fmt.Sprintf("header=%s/window=%d/acl=%v", st, window, acl)
				b.Run(name, func(b *testing.B) { benchSendSigned(b, st, window, acl) })
			}
		}
	}
}

var benchAdmin, benchProducer = auth.Credentials{AccessKey: "bench-admin", SecretKey: "bench-admin-secret"},
	auth.Credentials{AccessKey: "bench-producer", SecretKey: "bench-producer-secret"}

func benchSendSigned(b *testing.B, st remoting.SerializeType, window int, acl bool) {
	var guard *auth.Guard
	creds := auth.Credentials{}
	if acl {
		dir, err := access.ParsePlainACL([]byte(`accounts:
  - {accessKey: bench-admin, secretKey: bench-admin-secret, admin: true}
  - {accessKey: bench-producer, secretKey: bench-producer-secret, topicPerms: [`+benchTopic+`=PUB]}
`), "bench.yml")
		if err != nil {
			b.Fatal(err)
		}
		guard, creds = auth.NewGuard(auth.GuardOptions{Source: auth.Fixed{Dir: dir}, Logger: zerolog.Nop()}), benchProducer
	}
	bb := newBenchBrokerACL(b, writer.FlushAsync, guard)
	c := bb.client(b)
	n := strconv.Itoa(benchQueues)
	create := remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": benchTopic, "readQueueNums": n, "writeQueueNums": n, "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil)
	if acl {
		benchAdmin.Sign(create)
	}
	c.invoke(create)
	var ring []byte
	for i := range benchQueues * window {
		ring = append(ring, sendFrameAs(b, st, i%benchQueues, creds)...)
	}
	frameLen := len(ring) / (benchQueues * window)
	for range 200 {
		c.roundTrip(ring[:window*frameLen], window)
	}
	b.SetBytes(benchBody)
	b.ReportAllocs()
	b.ResetTimer()
	at := 0
	for i := 0; i < b.N; i += window {
		k := min(window, b.N-i)
		if at+k > benchQueues*window {
			at = 0
		}
		c.roundTrip(ring[at*frameLen:(at+k)*frameLen], k)
		at += k
	}
	b.StopTimer()
}

// BenchmarkPullPath pulls stored messages through the whole pull path
// (router, pull stage, CommitLog reads, response flush), one request at a
// time, msgs messages per request. Comparing msgs=1 with msgs=32 gives the
// cost per message; allocs/msg is the allocation count per message pulled.
func BenchmarkPullPath(b *testing.B) {
	for _, msgs := range []int{1, 32} {
		b.Run(fmt.Sprintf("msgs=%d", msgs), func(b *testing.B) { benchPull(b, msgs) })
	}
}

func benchPull(b *testing.B, msgs int) {
	const stored = 1 << 14 // per queue 2048
	bb := newBenchBroker(b, writer.FlushAsync)
	c := bb.client(b)
	createBenchTopic(c)
	frames := sendFrames(b, remoting.SerializeJSON, 64)
	for range stored / 64 {
		c.roundTrip(frames, 64)
	}
	perQueue := int64(stored / benchQueues)
	deadline := time.Now().Add(30 * time.Second)
	for q := range benchQueues {
		for {
			cq := bb.pipe.Store().Queues.Lookup(benchTopic, int32(q))
			if cq != nil && cq.MaxOffset() >= perQueue {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("queue %d not dispatched within 30 s", q)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// Pull requests cycling over queue 0's offsets.
	var reqs [][]byte
	for off := int64(0); off+int64(msgs) <= perQueue; off += int64(msgs) {
		cmd := remoting.NewRequest(remoting.PullMessage, map[string]string{
			"consumerGroup": "bench_consumer", "topic": benchTopic, "queueId": "0",
			"queueOffset": strconv.FormatInt(off, 10), "maxMsgNums": strconv.Itoa(msgs),
			"sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0",
			"subscription": "*", "subVersion": "0", "expressionType": "TAG",
		}, nil)
		f, err := remoting.EncodeFrame(cmd)
		if err != nil {
			b.Fatal(err)
		}
		reqs = append(reqs, f)
	}
	for i := range 200 {
		c.roundTrip(reqs[i%len(reqs)], 1)
	}
	var before, after runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	runtime.ReadMemStats(&before)
	for i := 0; i < b.N; i++ {
		c.roundTrip(reqs[i%len(reqs)], 1)
	}
	runtime.ReadMemStats(&after)
	b.StopTimer()
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*msgs), "allocs/msg")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*msgs), "ns/msg")
}
