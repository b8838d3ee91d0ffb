package grpctest

import (
	"context"
	"strconv"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestRouteAndSettings checks QueryRoute's queues and endpoints, the
// settings a producer and a consumer of an orderly group get back, and
// the in-band refusals (no client id, unknown topic).
func TestRouteAndSettings(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	n := node(t, func(c *pipeline.Config) { c.AutoCreateTopic = false; c.MaxMessageSize = 1 << 20 }, nil)
	topic := processtest.Unique("grpc_route")
	processtest.CreateTopic(t, n, topic, 3)
	group := processtest.Unique("grpc_orderly")
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup, nil,
		[]byte(`{"groupName":"`+group+`","consumeMessageOrderly":true,"consumeEnable":true,"retryMaxTimes":4,"retryQueueNums":1}`))); r.Code != remoting.Success {
		t.Fatalf("create orderly group: %d %s", r.Code, r.Remark)
	}
	c := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// No client id: CLIENT_ID_REQUIRED, in band.
	r0, err := c.QueryRoute(ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}})
	if err != nil || r0.GetStatus().GetCode() != v2.Code_CLIENT_ID_REQUIRED {
		t.Fatalf("route without client id: %v %v", r0.GetStatus(), err)
	}
	cctx := withClientID(ctx, "test@1@1@route")
	r, err := c.QueryRoute(cctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}})
	if err != nil || r.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("route: %v %v", r.GetStatus(), err)
	}
	if len(r.MessageQueues) != 3 {
		t.Fatalf("route has %d queues, want 3", len(r.MessageQueues))
	}
	for i, q := range r.MessageQueues {
		a := q.GetBroker().GetEndpoints().GetAddresses()
		if q.Id != int32(i) || q.Permission != v2.Permission_READ_WRITE || len(a) != 1 ||
			a[0].Host+":"+itoa(a[0].Port) != n.GRPCAddr() || len(q.AcceptMessageTypes) != 4 {
			t.Fatalf("queue %d: %v", i, q)
		}
	}
	r2, err := c.QueryRoute(cctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic + "_missing"}})
	if err != nil || r2.GetStatus().GetCode() != v2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("route of an unknown topic without auto-creation: %v %v", r2.GetStatus(), err)
	}

	tele, err := c.Telemetry(cctx)
	if err != nil {
		t.Fatalf("telemetry: %v", err)
	}
	pt := v2.ClientType_PRODUCER
	if err := tele.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{ClientType: &pt,
		PubSub: &v2.Settings_Publishing{Publishing: &v2.Publishing{Topics: []*v2.Resource{{Name: topic}}}}}}}); err != nil {
		t.Fatalf("send settings: %v", err)
	}
	got, err := tele.Recv()
	if err != nil {
		t.Fatalf("recv settings: %v", err)
	}
	pub := got.GetSettings().GetPublishing()
	if got.GetStatus().GetCode() != v2.Code_OK || pub.GetMaxBodySize() != 1<<20 || !pub.GetValidateMessageType() ||
		got.GetSettings().GetBackoffPolicy().GetExponentialBackoff() == nil || got.GetSettings().GetBackoffPolicy().GetMaxAttempts() != 3 {
		t.Fatalf("producer settings: %v", got)
	}
	_ = tele.CloseSend()

	sctx := withClientID(ctx, "test@1@2@consumer")
	tele2, err := c.Telemetry(sctx)
	if err != nil {
		t.Fatalf("telemetry: %v", err)
	}
	ct := v2.ClientType_PUSH_CONSUMER
	if err := tele2.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{ClientType: &ct,
		PubSub: &v2.Settings_Subscription{Subscription: &v2.Subscription{Group: &v2.Resource{Name: group},
			Subscriptions: []*v2.SubscriptionEntry{{Topic: &v2.Resource{Name: topic},
				Expression: &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"}}}}}}}}); err != nil {
		t.Fatalf("send consumer settings: %v", err)
	}
	got, err = tele2.Recv()
	if err != nil {
		t.Fatalf("recv consumer settings: %v", err)
	}
	sub := got.GetSettings().GetSubscription()
	bp := got.GetSettings().GetBackoffPolicy()
	if !sub.GetFifo() || sub.GetReceiveBatchSize() != 32 || sub.GetLongPollingTimeout().AsDuration() != 20*time.Second ||
		bp.GetMaxAttempts() != 5 || len(bp.GetCustomizedBackoff().GetNext()) == 0 || got.GetSettings().GetMetric().GetOn() {
		t.Fatalf("consumer settings: %v", got)
	}
	// The orderly group's assignment: one per read queue.
	as, err := c.QueryAssignment(sctx, &v2.QueryAssignmentRequest{Topic: &v2.Resource{Name: topic}, Group: &v2.Resource{Name: group}})
	if err != nil || as.GetStatus().GetCode() != v2.Code_OK || len(as.Assignments) != 3 {
		t.Fatalf("orderly assignment: %v %v", as, err)
	}
	as2, err := c.QueryAssignment(sctx, &v2.QueryAssignmentRequest{Topic: &v2.Resource{Name: topic}, Group: &v2.Resource{Name: group + "_plain"}})
	if err != nil || len(as2.GetAssignments()) != 1 || as2.Assignments[0].MessageQueue.Id != -1 {
		t.Fatalf("plain assignment: %v %v", as2, err)
	}
	// A receive with a too short invisible time is refused in band.
	rs, err := c.ReceiveMessage(sctx, &v2.ReceiveMessageRequest{Group: &v2.Resource{Name: group},
		MessageQueue: &v2.MessageQueue{Topic: &v2.Resource{Name: topic}}, BatchSize: 1, InvisibleDuration: durationpb.New(time.Second)})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	first, err := rs.Recv()
	if err != nil || first.GetStatus().GetCode() != v2.Code_ILLEGAL_INVISIBLE_TIME {
		t.Fatalf("receive with 1 s invisible: %v %v", first, err)
	}
	// An empty lite subscription answers a clear status (lite topics:
	// lite_test.go).
	sl, err := c.SyncLiteSubscription(sctx, &v2.SyncLiteSubscriptionRequest{})
	if err != nil || sl.GetStatus().GetCode() != v2.Code_ILLEGAL_CONSUMER_GROUP {
		t.Fatalf("sync lite subscription: %v %v", sl, err)
	}
	_ = tele2.CloseSend()
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }
