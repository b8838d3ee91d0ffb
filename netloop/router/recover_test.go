package router_test

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/router"
	"github.com/wheelmq/wheelmq/storage/message"
)

// panicCode is a request code no RocketMQ client sends, served only in
// this test (router.ServePanics).
const panicCode int32 = 64999

// A handler's panic is that request's SYSTEM_ERROR: counted, logged with
// the request code and the stack, and the same connection and the broker
// serve on (a real broker: pipeline, router and netloop over TCP).
func TestHandlerPanicAnsweredAsError(t *testing.T) {
	router.ServePanics(t, panicCode, "handler exploded")
	logs := &syncBuffer{}
	reg := prometheus.NewRegistry()
	addr := startBroker(t, func(c *pipeline.Config) {
		c.Logger = zerolog.New(logs).Level(zerolog.WarnLevel)
		c.Registerer = reg
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	for i := 1; i <= 2; i++ {
		resp, err := c.Invoke(ctx, remoting.NewRequest(panicCode, nil, nil))
		if err != nil {
			t.Fatalf("panicking request %d: %v", i, err)
		}
		if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "INTERNAL_ERROR") {
			t.Fatalf("panicking request %d: code %d %q, want SYSTEM_ERROR [INTERNAL_ERROR]", i, resp.Code, resp.Remark)
		}
		// The next request on the same connection is served.
		resp, err = c.Invoke(ctx, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("request after panic %d on the same connection: %v %+v", i, err, resp)
		}
	}
	if got := panicCount(t, reg.Gather, "remoting", "64999"); got != 2 {
		t.Fatalf("wheelmq_handler_panics_total{protocol=remoting,kind=64999} = %v, want 2", got)
	}
	out := logs.String()
	if strings.Count(out, "panic recovered") != 2 || !strings.Contains(out, "handler exploded") ||
		!strings.Contains(out, "remoting request 64999") || !strings.Contains(out, "goroutine ") {
		t.Fatalf("want two log lines with the kind, the value and the stack; got:\n%s", out)
	}
	// A send on the same connection is stored.
	send := remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "pg", "topic": "TBW102", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": "0", "flag": "0", "reconsumeTimes": "0",
	}, []byte("after the panics"))
	if resp, err := c.Invoke(ctx, send); err != nil || resp.Code != remoting.Success {
		t.Fatalf("send after the panics: %v %+v", err, resp)
	}
}

// startBroker runs a broker on 127.0.0.1:0 (no name server) the way
// cmd/internal/process does, and stops it when the test ends.
func startBroker(t *testing.T, mutate func(*pipeline.Config)) string {
	t.Helper()
	cfg := pipeline.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.SegmentSize = 8 << 20
	cfg.DiskUsage = func() (float64, error) { return 0.1, nil }
	mutate(&cfg)
	pipe, err := pipeline.Open(cfg)
	if err != nil {
		t.Fatalf("open pipeline: %v", err)
	}
	core := broker.New(pipe)
	srv := netloop.NewServer(netloop.Config{Name: "broker", Addr: cfg.Listen, MaxFrame: cfg.MaxFrame, Logger: cfg.Logger}, router.New(core))
	if err := srv.Start(); err != nil {
		_ = pipe.Close()
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop server: %v", err)
		}
		if err := pipe.Shutdown(ctx); err != nil {
			t.Errorf("stop pipeline: %v", err)
		}
	})
	adv := netip.MustParseAddrPort(srv.Addr())
	core.Serve(adv, message.NewUniqKeyGenerator(adv.Addr(), os.Getpid(), 1))
	return srv.Addr()
}

// syncBuffer is a log sink written by the broker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
