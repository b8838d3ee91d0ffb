package process_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestConsoleLitePage: the console's lite page reads the broker API's lite
// snapshot: with lite topics a (3 messages) and b (1) of a LITE topic, a
// remoting client of group g subscribed to a with a-0 popped and in
// flight, the parent shows 2 resident lite topics holding 4 messages, 1 in
// flight; g with 1 client, 1 subscription, a backlog of 3 (a's, the only
// lite topic it read) and 1 in flight; the largest backlog a (3) before b
// (1). A NORMAL topic is not listed. With a budget of one lite topic the
// broker's view says it stopped short.
func TestConsoleLitePage(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	topic, normal := processtest.Unique("console_lite"), processtest.Unique("console_normal")
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "attributes": "+message.type=LITE",
	}, nil)); r.Code != remoting.Success {
		t.Fatalf("create LITE topic: %d %s", r.Code, r.Remark)
	}
	processtest.CreateTopic(t, n, normal, 2)
	for _, m := range [][2]string{{"a", "a-0"}, {"b", "b-0"}, {"a", "a-1"}, {"a", "a-2"}} {
		r := processtest.Invoke(t, n.BrokerAddr(), processtest.SendRequest(topic, -1, []byte(m[1]),
			map[string]string{message.PropLiteTopic: m[0], message.PropUniqKey: processtest.Unique("uk")}))
		if r.Code != remoting.Success {
			t.Fatalf("send %s: %d %s", m[1], r.Code, r.Remark)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, n.BrokerAddr(), remoting.ClientOptions{})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	l := &liteRemoting{t: t, c: c, client: "console@lite@1", group: "g_" + processtest.Unique("cg"), topic: topic}
	if r := l.ctl("PARTIAL_ADD", "a"); r.Code != remoting.Success {
		t.Fatalf("subscribe: %d %s", r.Code, r.Remark)
	}
	if resp, recs := l.popLite(4, 5000); resp.Code != remoting.Success || len(recs) != 1 || string(recs[0].Body) != "a-0" {
		t.Fatalf("pop: %d %s %v", resp.Code, resp.Remark, names(recs))
	}

	// The broker bounds its walk: with a budget of one lite topic the view
	// says it stopped short, the resident count still whole.
	found := false
	for _, v := range n.Broker().Core().LiteView(broker.Caller{}, 10, 1) {
		if v.Topic != topic {
			continue
		}
		found = true
		if v.Complete || v.Scanned != 1 || v.Resident != 2 {
			t.Fatalf("view with a budget of 1: %+v, want cut after 1 of 2 resident", v)
		}
	}
	if !found {
		t.Fatalf("the broker's lite view has no %s", topic)
	}

	w := newWebClient(t, "http://"+n.MetricsAddr())
	_, body := w.get("/lite")
	if strings.Contains(body, `data-topic="`+normal+`"`) {
		t.Fatalf("the NORMAL topic %s is on the lite page", normal)
	}
	sec := regexp.MustCompile(`(?s)<section class="lite-parent" data-topic="` + regexp.QuoteMeta(topic) + `">.*?</section>`).FindString(body)
	if sec == "" {
		t.Fatalf("no section for %s on the lite page:\n%s", topic, body)
	}
	group := regexp.MustCompile(`(?s)<tr data-group="` + regexp.QuoteMeta(l.group) + `">.*?</tr>`).FindString(sec)
	for _, w := range []struct{ in, want string }{
		{sec, `class="n resident">2<`}, {sec, `class="n holding">2<`}, {sec, `class="n subscribed">1<`},
		{sec, `class="n messages">4<`}, {group, `class="n clients">1<`}, {group, `class="n subscriptions">1<`},
		{group, `class="n backlog">3<`}, {group, `class="n inflight">1<`},
	} {
		if !strings.Contains(w.in, w.want) {
			t.Fatalf("lite page lacks %s in\n%s", w.want, w.in)
		}
	}
	if ia, ib := strings.Index(sec, `data-lite="a"`), strings.Index(sec, `data-lite="b"`); ia < 0 || ib < ia {
		t.Fatalf("largest backlogs: a at %d, b at %d; want a (3) before b (1)\n%s", ia, ib, sec)
	}
}
