package router

import (
	"maps"
	"testing"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestPushCommands: each push of the clients stage is the remoting request
// RocketMQ's header of its code has (the fields and body the stage's
// requests carried when it built them itself).
func TestPushCommands(t *testing.T) {
	body := []byte("body")
	tests := []struct {
		name   string
		push   clients.Push
		code   int32
		fields map[string]string
	}{
		{"ids changed", clients.ConsumerIDsChanged{Group: "G"}, remoting.NotifyConsumerIDsChanged,
			map[string]string{"consumerGroup": "G"}},
		{"check", clients.CheckTransaction{Topic: "RMQ_SYS_TRANS_HALF_TOPIC", TranStateTableOffset: 17, CommitLogOffset: 4096,
			OffsetMsgID: "OFF", MsgID: "UNIQ", TransactionID: "UNIQ", BrokerName: "broker-a", Message: body},
			remoting.CheckTransactionState, map[string]string{"topic": "RMQ_SYS_TRANS_HALF_TOPIC", "tranStateTableOffset": "17",
				"commitLogOffset": "4096", "offsetMsgId": "OFF", "msgId": "UNIQ", "transactionId": "UNIQ", "bname": "broker-a"}},
		{"reset", clients.ResetOffset{Topic: "T", Group: "G", Timestamp: -1, Body: body}, remoting.ResetConsumerClientOffset,
			map[string]string{"topic": "T", "group": "G", "queueId": "-1", "timestamp": "-1", "isForce": "false"}},
		{"reply", clients.ReplyMessage{ProducerGroup: "PG", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
			QueueID: 2, SysFlag: 1, BornTimestamp: 100, Flag: 3, Properties: "a\x01b\x02", ReconsumeTimes: 5,
			BornHost: "10.0.0.1:5000", StoreHost: "10.0.0.2:10911", StoreTimestamp: 200, Body: body},
			remoting.PushReplyMessageToClient, map[string]string{"producerGroup": "PG", "topic": "T", "defaultTopic": "TBW102",
				"defaultTopicQueueNums": "4", "queueId": "2", "sysFlag": "1", "bornTimestamp": "100", "flag": "3",
				"properties": "a\x01b\x02", "reconsumeTimes": "5", "unitMode": "false", "bornHost": "10.0.0.1:5000",
				"storeHost": "10.0.0.2:10911", "storeTimestamp": "200"}},
		{"relay", clients.Relay{RequestCode: remoting.GetConsumerRunningInfo, Fields: map[string]string{"clientId": "c@1"}, Body: body},
			remoting.GetConsumerRunningInfo, map[string]string{"clientId": "c@1"}},
	}
	for _, tt := range tests {
		cmd, err := pushCommand(tt.push)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if cmd.Code != tt.code || tt.push.Code() != tt.code || !maps.Equal(cmd.ExtFields, tt.fields) || cmd.Flag != 0 || cmd.IsResponse() {
			t.Errorf("%s: code %d (push says %d) flag %d fields %v, want code %d fields %v", tt.name, cmd.Code, tt.push.Code(),
				cmd.Flag, cmd.ExtFields, tt.code, tt.fields)
		}
		if _, ok := tt.push.(clients.ConsumerIDsChanged); !ok && string(cmd.Body) != "body" {
			t.Errorf("%s: body %q", tt.name, cmd.Body)
		}
	}
	if _, err := pushCommand(nil); err == nil {
		t.Error("a nil push was encoded")
	}
}

// TestMaxFrameDefaultsMatch: the broker configuration's default frame
// limit (pipeline) is the remoting codec's.
func TestMaxFrameDefaultsMatch(t *testing.T) {
	if pipeline.DefaultMaxFrame != remoting.DefaultMaxFrame {
		t.Fatalf("pipeline.DefaultMaxFrame %d, remoting.DefaultMaxFrame %d", pipeline.DefaultMaxFrame, remoting.DefaultMaxFrame)
	}
}
