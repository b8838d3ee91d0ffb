package main

// TestLiteAcksAfterMasterSIGKILL: lite acks survive a SIGKILL of the
// master of a replicated group (docs/lite.md, "Acks after a failover").

import (
	"context"
	"fmt"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// liteSession is a raw gRPC LitePushConsumer session: its Telemetry
// stream told the client type, then SyncLiteSubscription, ReceiveMessage
// and AckMessage calls.
type liteSession struct {
	c            v2.MessagingServiceClient
	ctx          context.Context
	group, topic string
}

// openLiteSession opens a session at endpoint; its stream and connection
// end with the test.
func openLiteSession(t *testing.T, endpoint, client, group, topic string) (*liteSession, error) {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(),
		"x-mq-client-id", client, "x-mq-language", "GO", "x-mq-protocol", "v2"), time.Minute)
	t.Cleanup(cancel)
	c := v2.NewMessagingServiceClient(conn)
	tele, err := c.Telemetry(ctx)
	if err != nil {
		return nil, err
	}
	typ := v2.ClientType_LITE_PUSH_CONSUMER
	if err := tele.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{
		ClientType: &typ, RequestTimeout: durationpb.New(3 * time.Second),
		PubSub: &v2.Settings_Subscription{Subscription: &v2.Subscription{Group: &v2.Resource{Name: group},
			Subscriptions: []*v2.SubscriptionEntry{{Topic: &v2.Resource{Name: topic},
				Expression: &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"}}}}}}}}); err != nil {
		return nil, err
	}
	if _, err := tele.Recv(); err != nil {
		return nil, err
	}
	go func() { // drains the stream; ends with ctx (the test's cleanup)
		for {
			if _, err := tele.Recv(); err != nil {
				return
			}
		}
	}()
	s := &liteSession{c: c, ctx: ctx, group: group, topic: topic}
	return s, nil
}

func (s *liteSession) subscribe(lite string) error {
	resp, err := s.c.SyncLiteSubscription(s.ctx, &v2.SyncLiteSubscriptionRequest{Action: v2.LiteSubscriptionAction_PARTIAL_ADD,
		Topic: &v2.Resource{Name: s.topic}, Group: &v2.Resource{Name: s.group}, LiteTopicSet: []string{lite}})
	if err != nil {
		return err
	}
	if resp.GetStatus().GetCode() != v2.Code_OK {
		return fmt.Errorf("subscribe %s: %v", lite, resp.GetStatus())
	}
	return nil
}

// next receives one message (waiting up to a long poll) and acks it; it
// returns its body and delivery attempt.
func (s *liteSession) next() (string, int32, error) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	stream, err := s.c.ReceiveMessage(ctx, &v2.ReceiveMessageRequest{Group: &v2.Resource{Name: s.group},
		MessageQueue: &v2.MessageQueue{Topic: &v2.Resource{Name: s.topic}, Id: -1}, BatchSize: 1,
		InvisibleDuration: durationpb.New(30 * time.Second), LongPollingTimeout: durationpb.New(5 * time.Second)})
	if err != nil {
		return "", 0, err
	}
	var got *v2.Message
	for {
		r, err := stream.Recv()
		if err != nil {
			break
		}
		if m := r.GetMessage(); m != nil && got == nil {
			got = m
		}
	}
	if got == nil {
		return "", 0, fmt.Errorf("no message")
	}
	ack, err := s.c.AckMessage(s.ctx, &v2.AckMessageRequest{Group: &v2.Resource{Name: s.group}, Topic: &v2.Resource{Name: s.topic},
		Entries: []*v2.AckMessageEntry{{MessageId: got.GetSystemProperties().GetMessageId(), ReceiptHandle: got.GetSystemProperties().GetReceiptHandle()}}})
	if err != nil || ack.GetStatus().GetCode() != v2.Code_OK {
		return "", 0, fmt.Errorf("ack %s: %v %v", got.GetBody(), ack.GetStatus(), err)
	}
	return string(got.GetBody()), got.GetSystemProperties().GetDeliveryAttempt(), nil
}

// TestLiteAcksAfterMasterSIGKILL: on operations.md's group of three
// (--min-in-sync-replicas 2, --flush sync), a group acks the first two of
// four lite messages on the master; once the master counts both acks
// journaled (confirmed by the in-sync replicas), it is SIGKILLed; the new
// master delivers the other two, in order, attempt 1: the acked ones are
// not delivered again.
func TestLiteAcksAfterMasterSIGKILL(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	nsAddrs, brokers := startExampleGroup(t)
	bd := waitGroupReady(t, nsAddrs[0])
	masterAddr, masterEP := bd.BrokerAddrs[0], bd.GRPCEndpoints[0]
	var masterMetrics string
	for _, m := range brokers {
		if m.listen == masterAddr {
			masterMetrics = m.p.metrics
		}
	}
	topic := processtest.Unique("lite_sigkill")
	group := topic + "_cg"
	if r := processtest.Invoke(t, masterAddr, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "attributes": "+message.type=LITE",
	}, nil)); r.Code != remoting.Success {
		t.Fatalf("create LITE topic: %d %s", r.Code, r.Remark)
	}
	for i := range 4 {
		r := processtest.Invoke(t, masterAddr, processtest.SendRequest(topic, -1, []byte(fmt.Sprintf("x-%d", i)),
			map[string]string{message.PropLiteTopic: "x", message.PropUniqKey: processtest.Unique("uk")}))
		if r.Code != remoting.Success {
			t.Fatalf("send x-%d: %d %s", i, r.Code, r.Remark)
		}
	}
	s, err := openLiteSession(t, masterEP, "lite-sigkill@1@1@a", group, topic)
	if err != nil {
		t.Fatalf("lite session at the master: %v", err)
	}
	if err := s.subscribe("x"); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		body, _, err := s.next()
		if want := fmt.Sprintf("x-%d", i); err != nil || body != want {
			t.Fatalf("master delivered %q %v, want %s", body, err, want)
		}
	}
	waitUntil(t, 10*time.Second, "the master to journal both acks", func() bool {
		return metricSum(t, masterMetrics, "wheelmq_lite_acks_journaled_total") >= 2
	})
	killMember(t, brokers, masterAddr)
	bd2 := waitGroup(t, nsAddrs[1], 30*time.Second, func(b namesrv.BrokerData) bool {
		return b.BrokerAddrs[0] != "" && b.BrokerAddrs[0] != masterAddr && b.GRPCEndpoints[0] != "" && b.GRPCEndpoints[0] != masterEP
	})
	newEP := bd2.GRPCEndpoints[0]
	var s2 *liteSession
	waitUntil(t, 20*time.Second, "a lite session at the new master "+newEP, func() bool {
		s2, err = openLiteSession(t, newEP, "lite-sigkill@1@1@b", group, topic)
		return err == nil && s2.subscribe("x") == nil
	})
	for i := 2; i < 4; i++ {
		body, attempt, err := s2.next()
		if want := fmt.Sprintf("x-%d", i); err != nil || body != want || attempt != 1 {
			t.Fatalf("new master delivered %q attempt %d (%v), want %s attempt 1: x-0 and x-1 were acked on the old master", body, attempt, err, want)
		}
	}
}
