package grpctest

import (
	"context"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestBatchAckIsOneCall: messages a v5 SimpleConsumer received are acked
// by one AckMessage of N entries (and a malformed one), which reaches the
// POP engine as one batch (its BatchAcks counter moves by one, its Acks by
// N); the same handles acked again are refused one by one; a delivery
// forwarded to the dead-letter queue is stored there and acked in the same
// call.
func TestBatchAckIsOneCall(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_batchack")
	group := topic + "_cg"
	processtest.CreateTopic(t, n, topic, 2)
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)
	const count = 9
	p := producer(t, sdkConfig(n, ""), []string{topic})
	sendBodies(t, p, topic, "m", count)
	c := simpleConsumer(t, sdkConfig(n, group), topic, rmq.SUB_ALL)
	got := receiveUntil(t, c, count, 60*time.Second, 20*time.Second)
	if len(got) != count {
		t.Fatalf("received %d of %d", len(got), count)
	}
	fwd, acks := got[0], got[1:]

	eng := n.Broker().Pipeline().Pop().Counters()
	batches0, acked0 := eng.BatchAcks.Load(), eng.Acks.Load()
	req := &v2.AckMessageRequest{Group: &v2.Resource{Name: group}, Topic: &v2.Resource{Name: topic}}
	for _, m := range acks {
		req.Entries = append(req.Entries, &v2.AckMessageEntry{MessageId: m.GetMessageId(), ReceiptHandle: m.GetReceiptHandle()})
	}
	req.Entries = append(req.Entries, &v2.AckMessageEntry{MessageId: "bogus", ReceiptHandle: "not a handle"})
	cl := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "batchack@1@1@test"), 10*time.Second)
	defer cancel()
	resp, err := cl.AckMessage(ctx, req)
	if err != nil {
		t.Fatalf("AckMessage: %v", err)
	}
	if resp.GetStatus().GetCode() != v2.Code_MULTIPLE_RESULTS || len(resp.GetEntries()) != len(acks)+1 {
		t.Fatalf("AckMessage of %d good entries and a bad one: %v, %d entries", len(acks), resp.GetStatus(), len(resp.GetEntries()))
	}
	for i, e := range resp.GetEntries()[:len(acks)] {
		if e.GetStatus().GetCode() != v2.Code_OK {
			t.Errorf("entry %d: %v", i, e.GetStatus())
		}
	}
	if st := resp.GetEntries()[len(acks)].GetStatus(); st.GetCode() != v2.Code_INVALID_RECEIPT_HANDLE {
		t.Errorf("the malformed entry: %v, want INVALID_RECEIPT_HANDLE", st)
	}
	if b, a := eng.BatchAcks.Load()-batches0, eng.Acks.Load()-acked0; b != 1 || a != int64(len(acks)) {
		t.Fatalf("the engine saw %d batch acks acking %d deliveries, want 1 batch of %d", b, a, len(acks))
	}

	// The same handles again: each refused, nothing acked.
	req.Entries = req.Entries[:len(acks)]
	resp, err = cl.AckMessage(ctx, req)
	if err != nil {
		t.Fatalf("AckMessage again: %v", err)
	}
	if resp.GetStatus().GetCode() != v2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("acking acked handles: %v, want INVALID_RECEIPT_HANDLE", resp.GetStatus())
	}

	// Forward one to the DLQ: stored there, and its handle is dead.
	fresp, err := cl.ForwardMessageToDeadLetterQueue(ctx, &v2.ForwardMessageToDeadLetterQueueRequest{
		Group: &v2.Resource{Name: group}, Topic: &v2.Resource{Name: topic}, ReceiptHandle: fwd.GetReceiptHandle(),
		MessageId: fwd.GetMessageId(), DeliveryAttempt: 1, MaxDeliveryAttempts: 17})
	if err != nil || fresp.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("ForwardMessageToDeadLetterQueue: %v %v", fresp.GetStatus(), err)
	}
	dlq := processtest.WaitQueue(t, n.BrokerAddr(), meta.DLQTopic(group), 0, 1, 10*time.Second)
	if len(dlq) != 1 || message.DecodeProperties(dlq[0].Properties)[message.PropUniqKey] != fwd.GetMessageId() {
		t.Fatalf("DLQ: %d records, want the forwarded message %s", len(dlq), fwd.GetMessageId())
	}
	resp, err = cl.AckMessage(ctx, &v2.AckMessageRequest{Group: req.Group, Topic: req.Topic,
		Entries: []*v2.AckMessageEntry{{MessageId: fwd.GetMessageId(), ReceiptHandle: fwd.GetReceiptHandle()}}})
	if err != nil || resp.GetStatus().GetCode() != v2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("acking a forwarded delivery: %v %v, want INVALID_RECEIPT_HANDLE", resp.GetStatus(), err)
	}
}

// TestOffsetRPCs: UpdateOffset, GetOffset and QueryOffset (beginning,
// end, timestamp) through the gRPC endpoint.
func TestOffsetRPCs(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_offsets")
	group := topic + "_cg"
	processtest.CreateTopic(t, n, topic, 1)
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)
	before := time.Now().Add(-time.Second)
	p := producer(t, sdkConfig(n, ""), []string{topic})
	sendBodies(t, p, topic, "m", 5)
	processtest.WaitQueue(t, n.BrokerAddr(), topic, 0, 5, 10*time.Second) // the consume-queue entries follow the answers

	cl := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "offsets@1@1@test"), 10*time.Second)
	defer cancel()
	mq := &v2.MessageQueue{Topic: &v2.Resource{Name: topic}, Id: 0}
	query := func(policy v2.QueryOffsetPolicy, ts *timestamppb.Timestamp) int64 {
		t.Helper()
		resp, err := cl.QueryOffset(ctx, &v2.QueryOffsetRequest{MessageQueue: mq, QueryOffsetPolicy: policy, Timestamp: ts})
		if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("QueryOffset %s: %v %v", policy, resp.GetStatus(), err)
		}
		return resp.GetOffset()
	}
	if b, e, at := query(v2.QueryOffsetPolicy_BEGINNING, nil), query(v2.QueryOffsetPolicy_END, nil),
		query(v2.QueryOffsetPolicy_TIMESTAMP, timestamppb.New(before)); b != 0 || e != 5 || at != 0 {
		t.Fatalf("QueryOffset beginning %d end %d at a time before the sends %d, want 0 5 0", b, e, at)
	}
	up, err := cl.UpdateOffset(ctx, &v2.UpdateOffsetRequest{Group: &v2.Resource{Name: group}, MessageQueue: mq, Offset: 3})
	if err != nil || up.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("UpdateOffset: %v %v", up.GetStatus(), err)
	}
	get, err := cl.GetOffset(ctx, &v2.GetOffsetRequest{Group: &v2.Resource{Name: group}, MessageQueue: mq})
	if err != nil || get.GetStatus().GetCode() != v2.Code_OK || get.GetOffset() != 3 {
		t.Fatalf("GetOffset after UpdateOffset 3: %d %v %v", get.GetOffset(), get.GetStatus(), err)
	}
	none := &v2.MessageQueue{Topic: &v2.Resource{Name: topic + "_none"}, Id: 0}
	get, err = cl.GetOffset(ctx, &v2.GetOffsetRequest{Group: &v2.Resource{Name: group}, MessageQueue: none})
	if err != nil || get.GetStatus().GetCode() != v2.Code_OFFSET_NOT_FOUND {
		t.Fatalf("GetOffset of a queue the group never committed: %v %v, want OFFSET_NOT_FOUND", get.GetStatus(), err)
	}
}
