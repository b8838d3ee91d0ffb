package process_test

import (
	"context"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestConsoleTopicsCountMessages: the topics list shows what each topic's
// queues hold now (3 sends over 2 queues: 3; a topic sent nothing: 0).
func TestConsoleTopicsCountMessages(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	topic, empty := processtest.Unique("counted"), processtest.Unique("empty")
	processtest.CreateTopic(t, n, topic, 2)
	processtest.CreateTopic(t, n, empty, 2)
	p := processtest.Producer(t, n.NamesrvAddr())
	for range 3 {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("x"))); err != nil {
			t.Fatal(err)
		}
	}
	w := newWebClient(t, "http://"+n.MetricsAddr())
	cell := func(name string) string {
		_, body := w.get("/topics?q=" + url.QueryEscape(name))
		m := regexp.MustCompile(`(?s)` + regexp.QuoteMeta(name) + `</a>.*?<td class="n msgs">(\d+)</td>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no row with a message count for %s in the topics list", name)
		}
		return m[1]
	}
	deadline := time.Now().Add(10 * time.Second) // the consume-queue entries follow the answers
	for cell(topic) != "3" {
		if time.Now().After(deadline) {
			t.Fatalf("topics list shows %s messages in %s after 3 sends, want 3", cell(topic), topic)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := cell(empty); got != "0" {
		t.Fatalf("topics list shows %s messages in %s, which was sent nothing", got, empty)
	}
}
