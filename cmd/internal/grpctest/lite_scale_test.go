package grpctest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/litelog"
)

// envInt reads a positive integer from the environment (def otherwise).
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// vmRSS is the process's resident set (/proc/self/status VmRSS, bytes; 0
// where there is none).
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// heapInUse is the Go heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestLiteScale is the lite topics' scale run (task bench:lite: one
// million lite topics, 10000 subscribed; docs/lite.md, "Scale"): N lite
// topics of one LITE parent get one message each, sent with raw gRPC
// SendMessage calls of 64 messages from 8 goroutines; then clients of one
// group subscribe to S of them (2000 each, the default quota) and receive
// and ack their S messages. It reports the send and receive rates and the
// memory the lite state holds (the broker runs in the test process: the Go
// heap after a collection, before and after, and the RSS). The default
// test suite runs it small (2000 topics, 400 subscribed). Then it
// restarts the broker on the same data directory and reports how long the
// start took (the lite log replayed);
// WHEELMQ_LITE_TOPICS and WHEELMQ_LITE_SUBS set the sizes,
// WHEELMQ_LITE_RESIDENT_MAX the broker's --lite-resident-max (default 0,
// no bound; the default suite runs it at 500, so that it evicts and
// reloads).
func TestLiteScale(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	topics, subs := envInt("WHEELMQ_LITE_TOPICS", 2000), envInt("WHEELMQ_LITE_SUBS", 400)
	subs = min(subs, topics)
	resident := 500
	if v, ok := os.LookupEnv("WHEELMQ_LITE_RESIDENT_MAX"); ok {
		resident, _ = strconv.Atoi(v)
	}
	dir := t.TempDir()
	opts := processtest.Options{Dir: dir, Mutate: func(c *pipeline.Config) { c.MaxWriterBacklog, c.LiteResidentMax = 1<<20, resident },
		MutateNode: func(c *process.Config) { c.GRPC.Listen = "127.0.0.1:0" }}
	n := processtest.Start(t, opts)
	topic, group := processtest.Unique("lite_scale"), processtest.Unique("lite_scale_cg")
	createLiteTopic(t, n, topic, "")
	c := rawClient(t, n.GRPCAddr())
	core := n.Broker().Core()
	heap0, rss0 := heapInUse(), vmRSS()

	// Send: one message per lite topic "t<i>".
	began := time.Now()
	const senders, perCall = 8, 64
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := range senders {
		wg.Go(func() {
			ctx := withClientID(context.Background(), fmt.Sprintf("bench@1@%d@litesend", w))
			for {
				start := next.Add(perCall) - perCall
				if start >= int64(topics) {
					return
				}
				req := &v2.SendMessageRequest{}
				for i := start; i < min(start+perCall, int64(topics)); i++ {
					lite := "t" + strconv.FormatInt(i, 10)
					req.Messages = append(req.Messages, rawMessage(topic, "m-"+lite, func(sp *v2.SystemProperties) {
						sp.LiteTopic, sp.MessageType = &lite, v2.MessageType_LITE
					}))
				}
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				resp, err := c.SendMessage(cctx, req)
				cancel()
				if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
					failed.Add(1)
					t.Errorf("send %d..: %v %v", start, err, resp.GetStatus())
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.FailNow()
	}
	sendTook := time.Since(began)
	waitFor(t, 60*time.Second, "every lite topic created", func() bool {
		st := core.LiteStats()
		return st.Topics+st.Evicted >= topics && (resident <= 0 || st.Topics <= resident)
	})
	heap1, rss1 := heapInUse(), vmRSS()
	if path := os.Getenv("WHEELMQ_LITE_HEAPPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}

	// Receive: clients of 2000 subscriptions each, S in all.
	began = time.Now()
	const perClient = 2000
	var got atomic.Int64
	for cl := 0; cl*perClient < subs; cl++ {
		lites := make([]string, 0, perClient)
		for i := cl * perClient; i < min((cl+1)*perClient, subs); i++ {
			lites = append(lites, "t"+strconv.Itoa(i))
		}
		id := fmt.Sprintf("bench@1@%d@literecv", cl)
		ctx, cancel := context.WithTimeout(withClientID(context.Background(), id), 5*time.Minute)
		defer cancel()
		liteTelemetry(t, c, ctx, group, topic)
		wg.Go(func() {
			resp, err := c.SyncLiteSubscription(ctx, &v2.SyncLiteSubscriptionRequest{Action: v2.LiteSubscriptionAction_COMPLETE_ADD,
				Topic: &v2.Resource{Name: topic}, Group: &v2.Resource{Name: group}, LiteTopicSet: lites})
			if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
				t.Errorf("subscribe: %v %v", err, resp.GetStatus())
				return
			}
			for left := len(lites); left > 0; {
				msgs, err := liteReceive(ctx, c, group, topic)
				if err != nil {
					t.Errorf("receive: %v", err)
					return
				}
				ack := &v2.AckMessageRequest{Group: &v2.Resource{Name: group}, Topic: &v2.Resource{Name: topic}}
				for _, m := range msgs {
					ack.Entries = append(ack.Entries, &v2.AckMessageEntry{MessageId: m.GetSystemProperties().GetMessageId(),
						ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()})
				}
				if len(ack.Entries) > 0 {
					if r, err := c.AckMessage(ctx, ack); err != nil || r.GetStatus().GetCode() != v2.Code_OK {
						t.Errorf("ack: %v %v", err, r.GetStatus())
						return
					}
				}
				left -= len(msgs)
				got.Add(int64(len(msgs)))
			}
		})
	}
	wg.Wait()
	recvTook := time.Since(began)
	if int(got.Load()) != subs {
		t.Fatalf("received %d of %d", got.Load(), subs)
	}
	st := core.LiteStats()
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	t.Logf("lite topics %d: sent in %v (%.0f msgs/s); heap %s -> %s (%.0f B per lite topic), RSS %s -> %s",
		topics, sendTook.Round(time.Millisecond), float64(topics)/sendTook.Seconds(), mib(int64(heap0)), mib(int64(heap1)),
		float64(int64(heap1)-int64(heap0))/float64(topics), mib(rss0), mib(rss1))
	t.Logf("subscriptions %d: received and acked in %v (%.0f msgs/s); lite state after: %+v",
		subs, recvTook.Round(time.Millisecond), float64(subs)/recvTook.Seconds(), st)
	if st.Topics+st.Evicted != topics || (resident <= 0 && st.Messages != topics-subs) || st.Subscriptions != subs || st.InFlight != 0 {
		t.Fatalf("lite state after: %+v, want %d topics (resident and evicted), %d messages, %d subscriptions", st, topics, topics-subs, subs)
	}

	// Restart on the same data directory: the lite log is replayed.
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	if err := n.Stop(sctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	var logBytes int64
	if fi, err := os.Stat(litelog.Path(broker.LiteDir(dir))); err == nil {
		logBytes = fi.Size()
	}
	began = time.Now()
	n = processtest.Start(t, opts)
	startTook := time.Since(began)
	st = n.Broker().Core().LiteStats()
	t.Logf("restart with a lite log of %s: started in %v; lite state %+v", mib(logBytes), startTook.Round(time.Millisecond), st)
	if st.Topics+st.Evicted != topics-subs || (st.Evicted == 0 && st.Messages != topics-subs) {
		t.Fatalf("after the restart: %+v, want %d lite topics holding one message each (the consumed ones gone)", st, topics-subs)
	}
}

// liteReceive is one raw ReceiveMessage of a LitePushConsumer session.
func liteReceive(ctx context.Context, c v2.MessagingServiceClient, group, topic string) ([]*v2.Message, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := c.ReceiveMessage(rctx, &v2.ReceiveMessageRequest{Group: &v2.Resource{Name: group},
		MessageQueue: &v2.MessageQueue{Topic: &v2.Resource{Name: topic}, Id: -1}, BatchSize: 32,
		InvisibleDuration: durationpb.New(30 * time.Second), LongPollingTimeout: durationpb.New(5 * time.Second)})
	if err != nil {
		return nil, err
	}
	var out []*v2.Message
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if st := r.GetStatus(); st != nil && st.GetCode() != v2.Code_OK && st.GetCode() != v2.Code_MESSAGE_NOT_FOUND {
			return out, fmt.Errorf("receive: %v", st)
		}
		if m := r.GetMessage(); m != nil {
			out = append(out, m)
		}
	}
}
