package grpctest

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestProducerTimerFarRecall: a timer message due in 300 days through the
// Go v5 SDK is accepted (the broker's longest delay, 365 days, applies to
// gRPC as to remoting) and recalled with its receipt's handle.
func TestProducerTimerFarRecall(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_far_timer")
	processtest.CreateTopic(t, n, topic, 1)
	p := producer(t, sdkConfig(n, ""), []string{topic})
	m := &rmq.Message{Topic: topic, Body: []byte("in 300 days")}
	m.SetDelayTimestamp(time.Now().Add(300 * 24 * time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := p.Send(ctx, m)
	if err != nil || len(rs) != 1 {
		t.Fatalf("send a timer message due in 300 days: %v", err)
	}
	if rs[0].RecallHandle == "" {
		t.Fatal("the timer message's receipt has no recall handle")
	}
	id, err := p.Recall(ctx, topic, rs[0].RecallHandle)
	if err != nil || id != rs[0].MessageID {
		t.Fatalf("recall: id %q (sent %q), %v", id, rs[0].MessageID, err)
	}
	// The cancel reached the timer wheel: the recall changed the broker,
	// not only answered.
	wheel := n.Broker().Pipeline().Wheel()
	waitFor(t, 10*time.Second, "the recall's cancel in the timer wheel", func() bool {
		st := wheel.Stats()
		return st.Pending == 1 && st.PendingCancels == 1
	})
}

// TestSendBornHost: a message sent over gRPC is stored with the client's
// own address (IP and port of its connection) as BornHost, not the
// broker's loopback.
func TestSendBornHost(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_bornhost")
	processtest.CreateTopic(t, n, topic, 1)
	var mu sync.Mutex
	var local netip.AddrPort
	conn, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecureCreds()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err == nil {
				mu.Lock()
				local = c.LocalAddr().(*net.TCPAddr).AddrPort()
				mu.Unlock()
			}
			return c, err
		}))
	if err != nil {
		t.Fatalf("grpc dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	c := v2.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@bornhost"), 10*time.Second)
	defer cancel()
	resp, err := c.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{rawMessage(topic, "born", nil)}})
	if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("send: %v %v", resp.GetStatus(), err)
	}
	recs := processtest.WaitQueue(t, n.BrokerAddr(), topic, 0, 1, 10*time.Second)
	mu.Lock()
	want := local
	mu.Unlock()
	if len(recs) != 1 || recs[0].BornHost != want {
		t.Fatalf("stored %+v; want one record with the client's address %v as BornHost", recs, want)
	}
}

// rawMessage is a v2 message for topic with the system properties set
// (message id, and what set asks for).
func rawMessage(topic, body string, set func(*v2.SystemProperties)) *v2.Message {
	sp := &v2.SystemProperties{MessageId: processtest.Unique("id"), MessageType: v2.MessageType_NORMAL,
		BodyEncoding: v2.Encoding_IDENTITY, BornTimestamp: timestamppb.Now(), BornHost: "test"}
	if set != nil {
		set(sp)
	}
	return &v2.Message{Topic: &v2.Resource{Name: topic}, SystemProperties: sp, Body: []byte(body)}
}

// TestSendRulesBothProtocols: the longest delay and the message-type rule
// give the same answer over remoting and over gRPC (each in its own
// codes): one rule, in the broker, behind both.
func TestSendRulesBothProtocols(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := node(t, nil, nil)
	plain := processtest.Unique("rules_plain")
	processtest.CreateTopic(t, n, plain, 1)
	typed := func(kind string) string {
		topic := processtest.Unique("rules_" + kind)
		if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
			"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG",
			"attributes": "+message.type=" + kind,
		}, nil)); r.Code != remoting.Success {
			t.Fatalf("create %s topic: %d %s", kind, r.Code, r.Remark)
		}
		return topic
	}
	normal, fifo := typed("NORMAL"), typed("FIFO")
	day := 24 * time.Hour
	type msg struct {
		deliverIn time.Duration // 0: none
		group     string        // message group ("": none)
	}
	cases := []struct {
		name     string
		topic    string
		m        msg
		remoting int32
		grpc     v2.Code
	}{
		{"due in 300 days", plain, msg{deliverIn: 300 * day}, remoting.Success, v2.Code_OK},
		{"due in 400 days", plain, msg{deliverIn: 400 * day}, remoting.MessageIllegal, v2.Code_ILLEGAL_DELIVERY_TIME},
		{"FIFO to a NORMAL topic", normal, msg{group: "g1"}, remoting.MessageIllegal, v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"NORMAL to a FIFO topic", fifo, msg{}, remoting.MessageIllegal, v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"FIFO to a FIFO topic", fifo, msg{group: "g1"}, remoting.Success, v2.Code_OK},
		// RocketMQ's order: a delay makes it a DELAY message, group or not.
		{"delayed FIFO to a FIFO topic", fifo, msg{group: "g1", deliverIn: time.Hour}, remoting.MessageIllegal,
			v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"delay to a NORMAL topic", normal, msg{deliverIn: time.Hour}, remoting.MessageIllegal, v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
	}
	gc := rawClient(t, n.GRPCAddr())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var due time.Time
			if tc.m.deliverIn > 0 {
				due = time.Now().Add(tc.m.deliverIn)
			}
			props := map[string]string{message.PropUniqKey: processtest.Unique("uk")}
			if !due.IsZero() {
				props[message.PropTimerDeliverMS] = strconv.FormatInt(due.UnixMilli(), 10)
			}
			if tc.m.group != "" {
				props[message.PropShardingKey] = tc.m.group
			}
			r := processtest.Invoke(t, n.BrokerAddr(), processtest.SendRequest(tc.topic, 0, []byte("remoting"), props))
			if r.Code != tc.remoting {
				t.Errorf("remoting: code %d %q, want %d", r.Code, r.Remark, tc.remoting)
			}
			ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@rules"), 10*time.Second)
			defer cancel()
			resp, err := gc.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{rawMessage(tc.topic, "grpc",
				func(sp *v2.SystemProperties) {
					if tc.m.group != "" {
						sp.MessageGroup = &tc.m.group
						sp.MessageType = v2.MessageType_FIFO
					}
					if !due.IsZero() {
						sp.DeliveryTimestamp = timestamppb.New(due)
						sp.MessageType = v2.MessageType_DELAY
					}
				})}})
			if err != nil {
				t.Fatalf("grpc send: %v", err)
			}
			if got := resp.GetStatus().GetCode(); got != tc.grpc {
				t.Errorf("grpc: %s %q, want %s", got, resp.GetStatus().GetMessage(), tc.grpc)
			}
		})
	}
}
