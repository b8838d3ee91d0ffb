package process_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestConsoleGetChangesNothing GETs every page of a real broker's console,
// look-ups by id, key and queue offset, unknown groups and topics and the
// change paths with their form in the query, and checks that the topic
// and group tables are byte for byte what they were.
func TestConsoleGetChangesNothing(t *testing.T) {
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	processtest.CreateTopic(t, n, "get-topic", 2)
	p := processtest.Producer(t, n.NamesrvAddr())
	m := primitive.NewMessage("get-topic", []byte("x"))
	m.WithKeys([]string{"k1"})
	res, err := p.SendSync(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	tables := func() []byte {
		a := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
		b := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(admin.GetAllSubscriptionGroupConfig, nil, nil))
		return append(append([]byte(nil), a.Body...), b.Body...)
	}
	before := tables()
	w := newWebClient(t, "http://"+n.MetricsAddr())
	q := url.QueryEscape
	for _, path := range []string{"/", "/stages", "/topics", "/topics?q=get", "/topic?name=get-topic", "/topic?name=no-such",
		"/groups", "/group?name=no-such-group", "/messages", "/messages?id=" + res.OffsetMsgID,
		"/messages?id=" + q(res.MsgID) + "&topic=get-topic", "/messages?key=k1&topic=get-topic",
		"/messages?topic=get-topic&queue=0&offset=0", "/messages?topic=get-topic&queue=1&offset=0",
		"/messages?topic=no-such&queue=0&offset=0", "/timers", "/timers?range=year", "/cluster",
		"/topics/create?name=by-get", "/topics/delete?name=get-topic", "/groups/reset?group=g&topic=get-topic&at=2026-01-01T00:00",
		"/timers/cancel?offsetMsgId=" + res.OffsetMsgID, "/login", "/logout"} {
		code, body := w.get(path)
		if code != http.StatusOK && code != http.StatusMethodNotAllowed && code != http.StatusSeeOther {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
	}
	if after := tables(); !bytes.Equal(before, after) {
		t.Fatalf("GETs changed the tables:\nbefore %s\nafter  %s", before, after)
	}
}
