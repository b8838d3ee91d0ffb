package grpctest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestOneModelPerGroup: a group consumed by a remoting push consumer
// (pulls) is refused to a v5 SimpleConsumer (FORBIDDEN, "one model at a
// time"); a group with POP deliveries in flight is refused pulls until they
// are acked; SET_MESSAGE_REQUEST_MODE (401) decides over both.
func TestOneModelPerGroup(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("onemodel")
	processtest.CreateTopic(t, n, topic, 1)
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)
	p := producer(t, sdkConfig(n, ""), []string{topic})
	sendBodies(t, p, topic, "m", 2)

	// A group pulled by a remoting push consumer: a pop is refused.
	pulled := topic + "_pulled"
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), pulled, topic, "*")
	if !rec.WaitFor(2, 30*time.Second) {
		t.Fatalf("the push consumer received %d of 2", rec.Len())
	}
	c := simpleConsumer(t, sdkConfig(n, pulled), topic, rmq.SUB_ALL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err := c.Receive(ctx, 4, 10*time.Second)
	cancel()
	var st *rmq.ErrRpcStatus
	if !errors.As(err, &st) || st.Code != int32(v2.Code_FORBIDDEN) || !strings.Contains(st.Message, "one model at a time") {
		t.Fatalf("a SimpleConsumer of a group a push consumer pulls: %v, want FORBIDDEN 'one model at a time'", err)
	}
	t.Logf("pop refused: %s", st.Message)

	// A group with POP deliveries in flight: a pull is refused until acked.
	popped := topic + "_popped"
	pc := simpleConsumer(t, sdkConfig(n, popped), topic, rmq.SUB_ALL)
	got := receiveUntil(t, pc, 2, 20*time.Second, 20*time.Second)
	if len(got) != 2 {
		t.Fatalf("SimpleConsumer received %d of 2", len(got))
	}
	resp := processtest.Invoke(t, n.BrokerAddr(), processtest.PullRequest(popped, topic, 0, 0, 8))
	if resp.Code != remoting.NoPermission || !strings.Contains(resp.Remark, "in flight") {
		t.Fatalf("a pull with POP deliveries in flight: code %d %q, want 16 'in flight'", resp.Code, resp.Remark)
	}
	t.Logf("pull refused: %s", resp.Remark)
	for _, m := range got {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := pc.Ack(ctx, m); err != nil {
			t.Fatalf("ack: %v", err)
		}
		cancel()
	}
	if resp := processtest.Invoke(t, n.BrokerAddr(), processtest.PullRequest(popped, topic, 0, 0, 8)); resp.Code == remoting.NoPermission {
		t.Fatalf("a pull after every POP delivery was acked: %d %q", resp.Code, resp.Remark)
	}

	// 401 switches the pulled group to POP: pops now pass, pulls are refused.
	setMode(t, n, pulled, topic, "POP")
	if resp := processtest.Invoke(t, n.BrokerAddr(), processtest.PullRequest(pulled, topic, 0, 0, 8)); resp.Code != remoting.NoPermission ||
		!strings.Contains(resp.Remark, "SET_MESSAGE_REQUEST_MODE") {
		t.Fatalf("a pull of a group set to POP: %d %q", resp.Code, resp.Remark)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	_, err = c.Receive(ctx, 4, 10*time.Second)
	cancel()
	if err != nil && !(errors.As(err, &st) && st.Code == int32(v2.Code_MESSAGE_NOT_FOUND)) {
		t.Fatalf("a pop of a group set to POP: %v", err)
	}
	// RocketMQ's refusals of 401.
	if resp := invokeSetMode(t, n, pulled, "%RETRY%"+pulled, "POP"); resp.Code != remoting.NoPermission {
		t.Fatalf("401 on a retry topic: %d %q", resp.Code, resp.Remark)
	}
	if resp := invokeSetMode(t, n, pulled, topic+"_none", "POP"); resp.Code != remoting.TopicNotExist {
		t.Fatalf("401 on an unknown topic: %d %q", resp.Code, resp.Remark)
	}
}

// invokeSetMode sends SET_MESSAGE_REQUEST_MODE (401).
func invokeSetMode(t *testing.T, n *process.Node, group, topic, mode string) *remoting.Command {
	t.Helper()
	body, err := json.Marshal(map[string]any{"topic": topic, "consumerGroup": group, "mode": mode, "popShareQueueNum": 0})
	if err != nil {
		t.Fatal(err)
	}
	return processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.SetMessageRequestMode, nil, body))
}

// setMode sets (group, topic)'s mode and checks the answer.
func setMode(t *testing.T, n *process.Node, group, topic, mode string) {
	t.Helper()
	if resp := invokeSetMode(t, n, group, topic, mode); resp.Code != remoting.Success {
		t.Fatalf("401 %s: %d %q", mode, resp.Code, resp.Remark)
	}
}
