package process_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestQueryAssignment: two consumers of a group heartbeat on their own
// connections; QUERY_ASSIGNMENT splits the topic's four queues between
// them (AVG) in PULL mode; BROADCASTING gives each all four; after
// SET_MESSAGE_REQUEST_MODE POP, each gets the topic as queue -1 in POP
// mode; an unknown topic gets no assignment list.
func TestQueryAssignment(t *testing.T) {
	n := processtest.Start(t, processtest.Options{Dir: t.TempDir()})
	addr := n.BrokerAddr()
	topic, group := processtest.Unique("qa"), processtest.Unique("qag")
	processtest.CreateTopic(t, n, topic, 4)
	putGroup(t, n, meta.NewSubscriptionGroupConfig(group))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, id := range []string{"10.0.0.1@a", "10.0.0.2@b"} {
		cl, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		hb := fmt.Sprintf(`{"clientID":%q,"producerDataSet":[],"consumerDataSet":[{"groupName":%q,`+
			`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",`+
			`"subscriptionDataSet":[{"topic":%q,"subString":"*","tagsSet":[],"codeSet":[],"subVersion":1}],"unitMode":false}]}`,
			id, group, topic)
		if r, err := cl.Invoke(ctx, remoting.NewRequest(remoting.HeartBeat, nil, []byte(hb))); err != nil || r.Code != remoting.Success {
			t.Fatalf("heartbeat %s: %v %+v", id, err, r)
		}
	}
	type assignment struct {
		MessageQueue struct {
			Topic      string `json:"topic"`
			BrokerName string `json:"brokerName"`
			QueueID    int32  `json:"queueId"`
		} `json:"messageQueue"`
		Mode string `json:"mode"`
	}
	query := func(topic, client, model string) ([]assignment, bool) {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"topic": topic, "consumerGroup": group, "clientId": client,
			"strategyName": "AVG", "messageModel": model})
		r := processtest.Invoke(t, addr, remoting.NewRequest(remoting.QueryAssignment, nil, body))
		if r.Code != remoting.Success {
			t.Fatalf("query assignment: %d %s", r.Code, r.Remark)
		}
		var out struct {
			A *[]assignment `json:"messageQueueAssignments"`
		}
		if err := json.Unmarshal(r.Body, &out); err != nil {
			t.Fatalf("answer %s: %v", r.Body, err)
		}
		if out.A == nil {
			return nil, false
		}
		return *out.A, true
	}
	queues := func(as []assignment, mode string) []int32 {
		var q []int32
		for _, a := range as {
			if a.Mode != mode || a.MessageQueue.Topic != topic {
				t.Fatalf("assignment %+v, want mode %s of %s", a, mode, topic)
			}
			q = append(q, a.MessageQueue.QueueID)
		}
		slices.Sort(q)
		return q
	}
	var union []int32
	for _, id := range []string{"10.0.0.1@a", "10.0.0.2@b"} {
		as, _ := query(topic, id, "CLUSTERING")
		q := queues(as, "PULL")
		if len(q) != 2 {
			t.Fatalf("%s got queues %v, want 2 of 4", id, q)
		}
		union = append(union, q...)
	}
	slices.Sort(union)
	if !slices.Equal(union, []int32{0, 1, 2, 3}) {
		t.Fatalf("the two consumers got %v, want every queue once", union)
	}
	if as, _ := query(topic, "10.0.0.1@a", "BROADCASTING"); !slices.Equal(queues(as, "PULL"), []int32{0, 1, 2, 3}) {
		t.Fatalf("broadcasting: %+v", as)
	}
	mode, _ := json.Marshal(map[string]any{"topic": topic, "consumerGroup": group, "mode": "POP", "popShareQueueNum": 0})
	mustOK(t, "set POP mode", processtest.Invoke(t, addr, remoting.NewRequest(remoting.SetMessageRequestMode, nil, mode)))
	if as, _ := query(topic, "10.0.0.2@b", "CLUSTERING"); !slices.Equal(queues(as, "POP"), []int32{-1}) {
		t.Fatalf("POP mode: %+v", as)
	}
	if as, ok := query(processtest.Unique("nosuch"), "10.0.0.1@a", "CLUSTERING"); ok {
		t.Fatalf("unknown topic: %+v, want no assignment list", as)
	}
}
