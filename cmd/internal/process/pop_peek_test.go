package process_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestPeekNotificationPollingInfo: NOTIFICATION long-polls while nothing
// is there (POLLING_INFO counts it) and answers hasMsg once a message is
// sent; PEEK_MESSAGE returns it without taking it, so a pop still gets it;
// after the pop, peek and notification see nothing.
func TestPeekNotificationPollingInfo(t *testing.T) {
	n := processtest.Start(t, processtest.Options{Dir: t.TempDir()})
	addr := n.BrokerAddr()
	topic, group := processtest.Unique("peek"), processtest.Unique("peekg")
	processtest.CreateTopic(t, n, topic, 1)
	fields := func(extra map[string]string) map[string]string {
		f := map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0"}
		for k, v := range extra {
			f[k] = v
		}
		return f
	}
	notify := func(poll time.Duration) *remoting.Command {
		return processtest.Invoke(t, addr, remoting.NewRequest(remoting.Notification, fields(map[string]string{
			"pollTime": strconv.FormatInt(poll.Milliseconds(), 10), "bornTime": strconv.FormatInt(time.Now().UnixMilli(), 10)}), nil))
	}
	peek := func() *remoting.Command {
		return processtest.Invoke(t, addr, remoting.NewRequest(remoting.PeekMessage, fields(map[string]string{"maxMsgNums": "8"}), nil))
	}
	if r := notify(0); r.Code != remoting.Success || r.Field("hasMsg") != "false" {
		t.Fatalf("notification on an empty queue: %d %q hasMsg=%q", r.Code, r.Remark, r.Field("hasMsg"))
	}
	parked := make(chan *remoting.Command, 1)
	go func() { parked <- notify(5 * time.Second) }()
	var polling string
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r := processtest.Invoke(t, addr, remoting.NewRequest(remoting.PollingInfo, fields(nil), nil))
		if r.Code != remoting.Success {
			t.Fatalf("polling info: %d %q", r.Code, r.Remark)
		}
		if polling = r.Field("pollingNum"); polling == "1" {
			break
		}
	}
	if polling != "1" {
		t.Fatalf("pollingNum %q while a notification is parked, want 1", polling)
	}
	p := processtest.Producer(t, n.NamesrvAddr())
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("peeked"))); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-parked:
		if r.Code != remoting.Success || r.Field("hasMsg") != "true" {
			t.Fatalf("parked notification woken: %d %q hasMsg=%q", r.Code, r.Remark, r.Field("hasMsg"))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the parked notification was not answered")
	}
	for range 2 { // peeking twice changes nothing
		r := peek()
		recs, err := processtest.DecodeMessages(r.Body)
		if r.Code != remoting.Success || err != nil || len(recs) != 1 || string(recs[0].Body) != "peeked" {
			t.Fatalf("peek: %d %q, %d records, %v", r.Code, r.Remark, len(recs), err)
		}
	}
	_, got := doPop(t, addr, popReq(group, topic, 0, 30000, 0, "*"))
	if len(got) != 1 || got[0].body != "peeked" {
		t.Fatalf("pop after peeks: %+v", got)
	}
	if r := peek(); r.Code != remoting.PullNotFound || len(r.Body) != 0 {
		t.Fatalf("peek after the pop: %d %q, %d body bytes", r.Code, r.Remark, len(r.Body))
	}
	if r := notify(0); r.Field("hasMsg") != "false" {
		t.Fatalf("notification after the pop: hasMsg=%q", r.Field("hasMsg"))
	}
}

// TestPopRefusesBadInvisibleTime: an invisible time below 0 or beyond 30
// days (its deadline is a timer on the wheel) is refused, and the broker
// keeps serving the queue.
func TestPopRefusesBadInvisibleTime(t *testing.T) {
	n := processtest.Start(t, processtest.Options{Dir: t.TempDir()})
	topic, group := processtest.Unique("popinv"), processtest.Unique("popinvg")
	processtest.CreateTopic(t, n, topic, 1)
	for _, inv := range []int64{-1, 30*24*3600*1000 + 1, 1 << 62} {
		if code, got := doPop(t, n.BrokerAddr(), popReq(group, topic, 0, inv, 0, "*")); code != remoting.InvalidParameter || len(got) != 0 {
			t.Fatalf("invisibleTime %d: code %d, %d messages", inv, code, len(got))
		}
	}
	if code, _ := doPop(t, n.BrokerAddr(), popReq(group, topic, 0, 1000, 0, "*")); code != 19 {
		t.Fatalf("a good pop after the refusals: code %d, want NO_MESSAGE (19)", code)
	}
}
