package grpcgw

import (
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/storage/message"
)

// A v5 message's priority (SystemProperties.priority) is sent as the
// PRIORITY property and delivered back from it, with the PRIORITY type; a
// user property may not take the name.
func TestPriorityConversion(t *testing.T) {
	prio := int32(5)
	f, st := fromMessage(&v2.Message{Topic: &v2.Resource{Name: "T"}, Body: []byte("b"),
		SystemProperties: &v2.SystemProperties{MessageId: "01AB", Priority: &prio, MessageType: v2.MessageType_PRIORITY}})
	if st != nil || f.props[message.PropPriority] != "5" {
		t.Fatalf("fromMessage: %v %v", st, f.props)
	}
	r := &message.Record{Topic: "T", Body: []byte("b"), Properties: message.EncodeProperties(f.props)}
	m := toMessage(r, "broker-a", "127.0.0.1:10911")
	sp := m.GetSystemProperties()
	if sp.Priority == nil || *sp.Priority != 5 || sp.GetMessageType() != v2.MessageType_PRIORITY {
		t.Fatalf("toMessage: priority %v type %v", sp.Priority, sp.GetMessageType())
	}
	if _, leaked := m.GetUserProperties()[message.PropPriority]; leaked {
		t.Fatalf("PRIORITY delivered as a user property: %v", m.GetUserProperties())
	}
	_, st = fromMessage(&v2.Message{Topic: &v2.Resource{Name: "T"}, Body: []byte("b"), UserProperties: map[string]string{"PRIORITY": "9"},
		SystemProperties: &v2.SystemProperties{MessageId: "01AC"}})
	if st.GetCode() != v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY {
		t.Fatalf("user property PRIORITY: %v", st)
	}
}
