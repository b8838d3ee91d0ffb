package grpctest

import (
	"context"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestLiteSendRulesBothProtocols: the lite rules give the same answer over
// remoting (property __LITE_TOPIC) and gRPC (SystemProperties.lite_topic),
// from the broker (raw requests, not the SDK's own route check): a lite
// message needs a LITE topic (a NORMAL or an untyped one refuses it), a
// LITE topic needs a lite topic, a lite topic name must be valid, and a
// lite message cannot also carry a message group. Every refusal stores
// nothing; what is taken carries its lite topic in the CommitLog.
func TestLiteSendRulesBothProtocols(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := node(t, nil, nil)
	lite := processtest.Unique("rules_lite")
	createLiteTopic(t, n, lite, "")
	plain := processtest.Unique("rules_lite_plain")
	processtest.CreateTopic(t, n, plain, 1)
	normal := processtest.Unique("rules_lite_normal")
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": normal, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG",
		"attributes": "+message.type=NORMAL",
	}, nil)); r.Code != remoting.Success {
		t.Fatalf("create NORMAL topic: %d %s", r.Code, r.Remark)
	}
	cases := []struct {
		name, topic, liteTopic, group string
		remoting                      int32
		grpc                          v2.Code
	}{
		{"lite to a LITE topic", lite, "s1", "", remoting.Success, v2.Code_OK},
		{"lite to a NORMAL topic", normal, "s1", "", remoting.MessageIllegal, v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"lite to an untyped topic", plain, "s1", "", remoting.MessageIllegal, v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"no lite topic to a LITE topic", lite, "", "", remoting.MessageIllegal, v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"a bad lite topic name", lite, "a b", "", remoting.MessageIllegal, v2.Code_BAD_REQUEST},
		{"lite with a message group", lite, "s1", "g1", remoting.MessageIllegal, v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
	}
	gc := rawClient(t, n.GRPCAddr())
	taken := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{message.PropUniqKey: processtest.Unique("uk")}
			if tc.liteTopic != "" {
				props[message.PropLiteTopic] = tc.liteTopic
			}
			if tc.group != "" {
				props[message.PropShardingKey] = tc.group
			}
			r := processtest.Invoke(t, n.BrokerAddr(), processtest.SendRequest(tc.topic, 0, []byte("remoting"), props))
			if r.Code != tc.remoting {
				t.Errorf("remoting: code %d %q, want %d", r.Code, r.Remark, tc.remoting)
			}
			ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@literules"), 10*time.Second)
			defer cancel()
			resp, err := gc.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{rawMessage(tc.topic, "grpc",
				func(sp *v2.SystemProperties) {
					if tc.liteTopic != "" {
						sp.LiteTopic = &tc.liteTopic
						sp.MessageType = v2.MessageType_LITE
					}
					if tc.group != "" {
						sp.MessageGroup = &tc.group
					}
				})}})
			if err != nil {
				t.Fatalf("grpc send: %v", err)
			}
			if got := resp.GetStatus().GetCode(); got != tc.grpc {
				t.Errorf("grpc: %s %q, want %s", got, resp.GetStatus().GetMessage(), tc.grpc)
			}
			if tc.grpc == v2.Code_OK {
				taken += 2
			}
		})
	}
	// Only the two lite messages to the LITE topic were stored, each with
	// its lite topic.
	stored := 0
	for _, topic := range []string{lite, plain, normal} {
		queues := 1
		if topic == lite {
			queues = 2
		}
		for _, rs := range allRecords(t, n, topic, queues) {
			for _, r := range rs {
				v, ok := message.LookupProperty(r.Properties, message.PropLiteTopic)
				if topic != lite || !ok || v != "s1" {
					t.Errorf("%s stored %q with lite topic %q", topic, r.Body, v)
				}
				stored++
			}
		}
	}
	if stored != taken {
		t.Fatalf("stored %d messages, want %d", stored, taken)
	}
	if held := n.Broker().Core().LiteHeld(lite, "s1"); held != taken {
		t.Fatalf("lite topic s1 holds %d, want %d", held, taken)
	}
}
