package process_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/commitlog"
)

// healthz fetches /healthz.
func healthz(t *testing.T, addr string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestStageStoppedForGoodTurnsBrokerUnhealthy makes the commitlog writer
// fail with a corruption error (a fatal class): the supervisor stops it for
// good, /healthz turns 503 naming it, the health gauges drop, sends are
// refused at once with SYSTEM_ERROR naming the stage, the append that was
// in the writer when it failed is answered (it was stored), and requests
// that do not need the writer are still served.
func TestStageStoppedForGoodTurnsBrokerUnhealthy(t *testing.T) {
	faults := &timer.Faults{}
	n := processtest.Start(t, processtest.Options{Metrics: true, Mutate: func(c *pipeline.Config) {
		c.TimerFaults = faults
	}})
	if code, body := healthz(t, n.MetricsAddr()); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("healthy broker: /healthz %d %q", code, body)
	}
	if v := scrape(t, n.MetricsAddr(), "wheelmq_broker_healthy"); v != 1 {
		t.Fatalf("wheelmq_broker_healthy = %v on a fresh broker", v)
	}
	topic := processtest.Unique("health")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())

	faults.ArmError(writer.StageName, commitlog.ErrCorrupt)
	res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("stored before the failure")))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("the append in the writer when it failed was stored and must be acknowledged: %v %v", res, err)
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := healthz(t, n.MetricsAddr())
		if code == http.StatusServiceUnavailable {
			if !strings.Contains(body, "commitlog") || !strings.Contains(body, "corrupt") {
				t.Fatalf("/healthz body %q does not name the stage and the cause", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz still %d %q after the writer was stopped for good", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v := scrape(t, n.MetricsAddr(), "wheelmq_broker_healthy"); v != 0 {
		t.Errorf("wheelmq_broker_healthy = %v, want 0", v)
	}
	if v := scrape(t, n.MetricsAddr(), `wheelmq_stage_up{stage="commitlog"}`); v != 0 {
		t.Errorf("wheelmq_stage_up{commitlog} = %v, want 0", v)
	}
	if v := scrape(t, n.MetricsAddr(), `wheelmq_stage_up{stage="pull"}`); v != 1 {
		t.Errorf("wheelmq_stage_up{pull} = %v, want 1", v)
	}

	send := remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0", "properties": "",
	}, []byte("refused"))
	resp := processtest.Invoke(t, n.BrokerAddr(), send)
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "STAGE_DOWN") ||
		!strings.Contains(resp.Remark, "commitlog") {
		t.Fatalf("send on a broker without a writer: code %d %q, want SYSTEM_ERROR naming the stage", resp.Code, resp.Remark)
	}
	if v := scrape(t, n.MetricsAddr(), "wheelmq_broker_send_backlog"); v != 0 {
		t.Errorf("send backlog %v after every send was answered", v)
	}
	// Requests that do not need the writer are still served (the stored
	// message reaches its consume queue through dispatch, which runs on).
	deadline = time.Now().Add(5 * time.Second)
	for {
		resp = processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.GetMaxOffset,
			map[string]string{"topic": topic, "queueId": "0"}, nil))
		if resp.Code != remoting.Success {
			t.Fatalf("GET_MAX_OFFSET on an unhealthy broker: code %d %s", resp.Code, resp.Remark)
		}
		if resp.Field("offset") == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET_MAX_OFFSET on an unhealthy broker: offset %q, want 1", resp.Field("offset"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPprofOnlyWhenAskedFor: /debug/pprof is served with Config.Pprof
// (--pprof) only.
func TestPprofOnlyWhenAskedFor(t *testing.T) {
	for _, on := range []bool{false, true} {
		n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Pprof = on }})
		resp, err := http.Get("http://" + n.MetricsAddr() + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if got, want := resp.StatusCode == http.StatusOK, on; got != want {
			t.Errorf("pprof %v: /debug/pprof/ answered %d", on, resp.StatusCode)
		}
		if r, err := http.Get("http://" + n.MetricsAddr() + "/metrics"); err != nil || r.StatusCode != http.StatusOK {
			t.Errorf("pprof %v: /metrics: %v %v", on, r, err)
		} else {
			_ = r.Body.Close()
		}
	}
}

func TestLoopbackOnly(t *testing.T) {
	for addr, want := range map[string]bool{"": true, "127.0.0.1:9108": true, "[::1]:9108": true, "localhost:9108": true,
		"0.0.0.0:9108": false, ":9108": false, "10.0.0.1:9108": false, "bad": false} {
		if got := process.LoopbackOnly(addr); got != want {
			t.Errorf("LoopbackOnly(%q) = %v, want %v", addr, got, want)
		}
	}
}
