package grpctest

import (
	"context"
	"fmt"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/message"
)

// batchMsg is a plain gRPC message of topic with id and body.
func batchMsg(topic, id, body string) *v2.Message {
	return &v2.Message{Topic: &v2.Resource{Name: topic}, Body: []byte(body),
		SystemProperties: &v2.SystemProperties{MessageId: id, MessageType: v2.MessageType_NORMAL, Tag: new("b"),
			BornTimestamp: timestamppb.Now(), BodyEncoding: v2.Encoding_IDENTITY}}
}

// TestSendMessageBatchIsOneAppend: a SendMessage of several plain messages
// of one topic is stored as one batch (one queue, consecutive offsets, the
// entries answered with them and the messages' ids); a mix that a batch
// cannot carry (a delivery time) is still stored message by message.
func TestSendMessageBatchIsOneAppend(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_sendbatch")
	processtest.CreateTopic(t, n, topic, 4)
	cl := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "sendbatch@1@1@test"), 10*time.Second)
	defer cancel()

	req := &v2.SendMessageRequest{}
	for i := range 5 {
		req.Messages = append(req.Messages, batchMsg(topic, fmt.Sprintf("BATCH%02d", i), fmt.Sprintf("body-%d", i)))
	}
	resp, err := cl.SendMessage(ctx, req)
	if err != nil || resp.GetStatus().GetCode() != v2.Code_OK || len(resp.GetEntries()) != 5 {
		t.Fatalf("SendMessage of 5: %v, %v, %d entries", err, resp.GetStatus(), len(resp.GetEntries()))
	}
	first := resp.GetEntries()[0].GetOffset()
	for i, e := range resp.GetEntries() {
		if e.GetStatus().GetCode() != v2.Code_OK || e.GetMessageId() != fmt.Sprintf("BATCH%02d", i) || e.GetOffset() != first+int64(i) {
			t.Fatalf("entry %d: %v id %s offset %d (first %d)", i, e.GetStatus(), e.GetMessageId(), e.GetOffset(), first)
		}
	}

	recs := storedRecords(t, n, topic, 4, 5)
	var queue int32 = -1
	for q, rs := range recs {
		if len(rs) > 0 {
			if queue >= 0 {
				t.Fatalf("the batch is spread over queues %d and %d", queue, q)
			}
			queue = q
		}
	}
	if queue < 0 || len(recs[queue]) != 5 {
		t.Fatalf("stored: %v", recs)
	}
	for i, r := range recs[queue] {
		props := message.DecodeProperties(r.Properties)
		if props[message.PropUniqKey] != fmt.Sprintf("BATCH%02d", i) || string(r.Body) != fmt.Sprintf("body-%d", i) || props[message.PropTags] != "b" {
			t.Fatalf("record %d: uniq %q body %q tags %q", i, props[message.PropUniqKey], r.Body, props[message.PropTags])
		}
	}

	// A timer among them: no batch, each message stored on its own.
	mixed := &v2.SendMessageRequest{Messages: []*v2.Message{batchMsg(topic, "MIXED0", "plain"), batchMsg(topic, "MIXED1", "timer")}}
	mixed.Messages[1].SystemProperties.MessageType = v2.MessageType_DELAY
	mixed.Messages[1].SystemProperties.DeliveryTimestamp = timestamppb.New(time.Now().Add(time.Hour))
	resp, err = cl.SendMessage(ctx, mixed)
	if err != nil || resp.GetStatus().GetCode() != v2.Code_OK || len(resp.GetEntries()) != 2 {
		t.Fatalf("SendMessage of a plain and a timer message: %v, %v", err, resp.GetStatus())
	}
	if resp.GetEntries()[1].GetRecallHandle() == "" {
		t.Fatalf("the timer message was not stored as one: %v", resp.GetEntries()[1])
	}
}

// storedRecords reads topic's queues until they hold want records (a send
// is answered once appended; its consume-queue entry follows).
func storedRecords(t *testing.T, n *process.Node, topic string, queues, want int) map[int32][]message.Record {
	t.Helper()
	var recs map[int32][]message.Record
	waitFor(t, 10*time.Second, fmt.Sprintf("%d records in %s", want, topic), func() bool {
		recs = allRecords(t, n, topic, queues)
		total := 0
		for _, rs := range recs {
			total += len(rs)
		}
		return total >= want
	})
	return recs
}
