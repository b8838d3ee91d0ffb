package process_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestGroupRetryPolicyExponential: a group created with an exponential
// retry policy (400 ms, doubling, at most 1.6 s) and an official Go client
// push consumer that fails a message four times: the retries come back
// after 400 ms, 800 ms, 1.6 s and 1.6 s (never before; RocketMQ's delay
// levels would be 10 s, 30 s, 1 m, 2 m), each with its reconsume count, on
// the original topic. A policy the broker cannot follow is refused and
// changes nothing.
func TestGroupRetryPolicyExponential(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("backoff")
	processtest.CreateTopic(t, n, topic, 1)
	group := processtest.Unique("cg")
	cfg := meta.NewSubscriptionGroupConfig(group)
	cfg.GroupRetryPolicy = json.RawMessage(`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":400,"max":1600,"multiplier":2}}`)
	body, _ := json.Marshal(cfg)
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, body)); r.Code != remoting.Success {
		t.Fatalf("create group: %d %s", r.Code, r.Remark)
	}
	bad := cfg
	bad.GroupRetryPolicy = json.RawMessage(`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":400,"max":100}}`)
	body, _ = json.Marshal(bad)
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, body)); r.Code != remoting.InvalidParameter {
		t.Fatalf("a max below initial: code %d %q, want INVALID_PARAMETER", r.Code, r.Remark)
	}
	processtest.CreateTopic(t, n, meta.RetryGroupTopicPrefix+group, 1) // taken up at the first rebalance

	const fails = 4
	want := []time.Duration{400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 1600 * time.Millisecond}
	done := make(chan struct{})
	got := retryConsumer(t, n, topic, group, func(_ context.Context, seen int) consumer.ConsumeResult {
		if seen <= fails {
			return consumer.ConsumeRetryLater // delay level 0: the group's policy decides
		}
		if seen == fails+1 {
			close(done)
		}
		return consumer.ConsumeSuccess
	})
	p := processtest.Producer(t, n.NamesrvAddr())
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("again"))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%d retries never arrived; deliveries: %+v", fails, got())
	}
	ds := got()
	for i := 1; i <= fails; i++ {
		d, gap := ds[i], ds[i].at.Sub(ds[i-1].at)
		t.Logf("retry %d after %v (policy %v)", i, gap.Round(time.Millisecond), want[i-1])
		if d.topic != topic || d.reconsum != int32(i) {
			t.Errorf("retry %d: topic %q reconsumeTimes %d, want %q %d", i, d.topic, d.reconsum, topic, i)
		}
		if gap < want[i-1] {
			t.Errorf("retry %d came back after %v, before the policy's %v", i, gap, want[i-1])
		}
		// A deadline, not a speed claim: delay levels would be 10 s and more.
		if gap > want[i-1]+8*time.Second {
			t.Errorf("retry %d came back after %v: the policy's %v was not followed", i, gap, want[i-1])
		}
	}
}
