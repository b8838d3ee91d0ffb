package grpcgw

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/router"
	"github.com/wheelmq/wheelmq/storage/message"
)

// A panic in a unary handler (QueryRoute) and in a stream handler
// (Telemetry) is that call's INTERNAL: counted and logged by method, and
// the same client connection is served on. The panics come from the
// gateway's own option hooks (AcceptTypes, TypeCheck), set by this test.
func TestHandlerPanicIsInternal(t *testing.T) {
	var routePanics, settingsPanics atomic.Int32
	routePanics.Store(1)
	settingsPanics.Store(1)
	logs := &lockedBuffer{}
	reg := prometheus.NewRegistry()
	_, core := startBroker(t)
	g, err := New(Options{
		Listen: "127.0.0.1:0", Broker: core, BrokerName: "broker-a",
		AcceptTypes: func(attrs map[string]string) []v2.MessageType {
			if routePanics.Add(-1) >= 0 {
				panic("accept types exploded")
			}
			return DefaultAcceptTypes(attrs)
		},
		TypeCheck: func() bool {
			if settingsPanics.Add(-1) >= 0 {
				panic("type check exploded")
			}
			return true
		},
		Registerer: reg, Logger: zerolog.New(logs).Level(zerolog.WarnLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Stop(ctx)
	})
	conn, err := grpc.NewClient(g.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cli := v2.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, headerClientID, "panic-test-client", headerLanguage, "GOLANG")

	route := &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "TBW102"}}
	if _, err := cli.QueryRoute(ctx, route); status.Code(err) != codes.Internal {
		t.Fatalf("QueryRoute whose handler panicked: %v, want INTERNAL", err)
	}
	if resp, err := cli.QueryRoute(ctx, route); err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("QueryRoute after the panic: %v %v", resp.GetStatus(), err)
	}

	settings := &v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{
		ClientType: v2.ClientType_PRODUCER.Enum(),
		PubSub:     &v2.Settings_Publishing{Publishing: &v2.Publishing{Topics: []*v2.Resource{{Name: "TBW102"}}}},
	}}}
	telemetry := func() (*v2.TelemetryCommand, error) {
		sctx, scancel := context.WithCancel(ctx)
		defer scancel()
		st, err := cli.Telemetry(sctx)
		if err != nil {
			return nil, err
		}
		if err := st.Send(settings); err != nil {
			return nil, err
		}
		return st.Recv()
	}
	if _, err := telemetry(); status.Code(err) != codes.Internal {
		t.Fatalf("Telemetry whose handler panicked: %v, want INTERNAL", err)
	}
	if resp, err := telemetry(); err != nil || resp.GetSettings() == nil {
		t.Fatalf("Telemetry after the panic: %v %v", resp, err)
	}

	for method, want := range map[string]float64{"QueryRoute": 1, "Telemetry": 1} {
		if got := counterValue(t, reg, "grpc", method); got != want {
			t.Errorf("wheelmq_handler_panics_total{protocol=grpc,kind=%s} = %v, want %v", method, got, want)
		}
	}
	out := logs.String()
	for _, want := range []string{"grpc QueryRoute", "accept types exploded", "grpc Telemetry", "type check exploded", "goroutine "} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
}

// counterValue reads wheelmq_handler_panics_total{protocol,kind} (0: none).
func counterValue(t *testing.T, reg *prometheus.Registry, protocol, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "wheelmq_handler_panics_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["protocol"] == protocol && l["kind"] == kind {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// startBroker runs a broker on 127.0.0.1:0 (pipeline, router, netloop; no
// name server) and stops it when the test ends.
func startBroker(t *testing.T) (string, *broker.Broker) {
	t.Helper()
	cfg := pipeline.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.SegmentSize = 8 << 20
	cfg.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	cfg.DiskUsage = func() (float64, error) { return 0.1, nil }
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
		_ = srv.Stop(ctx)
		_ = pipe.Shutdown(ctx)
	})
	adv := netip.MustParseAddrPort(srv.Addr())
	core.Serve(adv, message.NewUniqKeyGenerator(adv.Addr(), os.Getpid(), 1))
	return srv.Addr(), core
}

// lockedBuffer is a log sink written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
