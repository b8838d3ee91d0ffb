package process_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestSQL92PushConsumer subscribes with the Go client's SQL92 selector: the
// consumer gets exactly the messages whose properties match.
func TestSQL92PushConsumer(t *testing.T) {
	t.Parallel() // its own broker; waits more than it computes: overlaps with the package's other parallel tests
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("sql")
	processtest.CreateTopic(t, n, topic, 2)
	p := processtest.Producer(t, n.NamesrvAddr())
	want := map[string]bool{}
	for i := 0; i < 20; i++ {
		m := primitive.NewMessage(topic, []byte(fmt.Sprint(i)))
		m.WithProperty("a", strconv.Itoa(i))
		tag := "TagA"
		if i%2 == 1 {
			tag = "TagB"
		}
		m.WithTag(tag)
		if i > 5 && tag == "TagA" {
			want[fmt.Sprint(i)] = true
		}
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	c, err := consumer.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{n.NamesrvAddr()})),
		consumer.WithGroupName(processtest.Unique("cg")), consumer.WithInstance(processtest.Unique("c")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 100)
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "a > 5 AND TAGS = 'TagA'"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				got <- string(m.Body)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	seen := map[string]bool{}
	deadline := time.After(30 * time.Second)
	for len(seen) < len(want) {
		select {
		case b := <-got:
			if !want[b] {
				t.Fatalf("received %s, which does not match", b)
			}
			seen[b] = true
		case <-deadline:
			t.Fatalf("received %v, want %v", seen, want)
		}
	}
	select {
	case b := <-got:
		if !want[b] {
			t.Fatalf("received %s, which does not match", b)
		}
	case <-time.After(2 * time.Second):
	}
}

// TestSQL92Refusals: a bad expression is refused at heartbeat and at
// CHECK_CLIENT_CONFIG with a remark.
func TestSQL92Refusals(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	hb := `{"clientID":"c1","producerDataSet":[],"consumerDataSet":[{"groupName":"G","consumeType":"CONSUME_PASSIVELY",` +
		`"messageModel":"BROADCASTING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"topic":"T",` +
		`"subString":"a > 'x'","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"SQL92"}],"unitMode":false}]}`
	resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.HeartBeat, nil, []byte(hb)))
	t.Logf("heartbeat: %d %s", resp.Code, resp.Remark)
	if resp.Code != remoting.SubscriptionParseFailed {
		t.Errorf("heartbeat code %d %s", resp.Code, resp.Remark)
	}
	body := `{"clientId":"c1","group":"G","subscriptionData":{"topic":"T","subString":"a >","expressionType":"SQL92","subVersion":1}}`
	resp = processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.CheckClientConfig, nil, []byte(body)))
	t.Logf("check: %d %s", resp.Code, resp.Remark)
	if resp.Code != remoting.SubscriptionParseFailed {
		t.Errorf("check code %d %s", resp.Code, resp.Remark)
	}
	body = `{"clientId":"c1","group":"G","subscriptionData":{"topic":"T","subString":"a > 1","expressionType":"SQL92","subVersion":1}}`
	if resp = processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.CheckClientConfig, nil, []byte(body))); resp.Code != 0 {
		t.Errorf("good check code %d %s", resp.Code, resp.Remark)
	}
}

// TestQueryAndViewMessage finds messages by key and by UNIQ_KEY, and by
// offset, through the requests Java tooling sends.
func TestQueryAndViewMessage(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("idx")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	var res []*primitive.SendResult
	for i := 0; i < 3; i++ {
		m := primitive.NewMessage(topic, []byte(fmt.Sprint(i)))
		m.WithKeys([]string{"order-7", fmt.Sprintf("k%d", i)})
		r, err := p.SendSync(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	query := func(key string, unique bool) *remoting.Command {
		f := map[string]string{"topic": topic, "key": key, "maxNum": "32", "beginTimestamp": "0",
			"endTimestamp": strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)}
		if unique {
			f["_UNIQUE_KEY_QUERY"] = "true"
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.QueryMessage, f, nil))
			if resp.Code == 0 || time.Now().After(deadline) {
				return resp
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	count := func(body []byte) int {
		k := 0
		for len(body) > 0 {
			body = body[message.PeekTotalSize(body):]
			k++
		}
		return k
	}
	if r := query("order-7", false); r.Code != 0 || count(r.Body) != 3 {
		t.Fatalf("order-7: %d %s %d records", r.Code, r.Remark, count(r.Body))
	} else {
		t.Logf("fields %v", r.ExtFields)
	}
	if r := query("k1", false); r.Code != 0 || count(r.Body) != 1 {
		t.Fatalf("k1: %d %s", r.Code, r.Remark)
	}
	if r := query(res[2].MsgID, true); r.Code != 0 || count(r.Body) != 1 {
		t.Fatalf("uniq: %d %s", r.Code, r.Remark)
	}
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.QueryMessage, map[string]string{
		"topic": topic, "key": "none", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": "99999999999999"}, nil)); r.Code != remoting.QueryNotFound {
		t.Fatalf("none: %d %s", r.Code, r.Remark)
	}
	_, off, err := message.ParseOffsetMsgID(res[1].OffsetMsgID)
	if err != nil {
		t.Fatal(err)
	}
	id := struct{ Offset int64 }{off}
	v := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(id.Offset, 10)}, nil))
	if v.Code != 0 || message.PeekPhysicalOffset(v.Body) != id.Offset {
		t.Fatalf("view: %d %s", v.Code, v.Remark)
	}
	v = processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(id.Offset+1, 10)}, nil))
	if v.Code != remoting.SystemError {
		t.Fatalf("bad view: %d %s", v.Code, v.Remark)
	}
	t.Logf("bad view remark: %s", v.Remark)
}
