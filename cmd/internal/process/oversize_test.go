package process_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestOversizeSendAnswered: a 10 MiB send from the official Go client,
// past the broker's frame limit (4 MiB of body by default), is answered
// with RocketMQ's MESSAGE_ILLEGAL (13) and the limit, which the client
// reports, instead of "connection reset by peer"; nothing is stored, and
// the next send on the same client goes through. The answer is counted in
// wheelmq_net_oversize_answered_total.
func TestOversizeSendAnswered(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("oversize")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	if got := metricByLabel(t, n, "wheelmq_net_oversize_answered_total", "server")["broker"]; got != 0 {
		t.Fatalf("oversize answers before any send: %v", got)
	}
	big := make([]byte, 10<<20)
	if _, err := rand.Read(big); err != nil { // incompressible: the client zips bodies over 4 KiB
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := p.SendSync(ctx, primitive.NewMessage(topic, big))
	if err == nil {
		t.Fatal("a 10 MiB send was accepted")
	}
	for _, want := range []string{"CODE: 13", "MAX: 4194304", "over max value"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("client error %q does not contain %q", err, want)
		}
	}
	if got := metricByLabel(t, n, "wheelmq_net_oversize_answered_total", "server")["broker"]; got != 1 {
		t.Errorf("wheelmq_net_oversize_answered_total{server=broker} = %v after one oversize send, want 1", got)
	}
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("small")))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send after the oversize one: %v %v", res, err)
	}
	if recs := processtest.WaitQueue(t, n.BrokerAddr(), topic, int32(res.MessageQueue.QueueId), 1, 5*time.Second); len(recs) != 1 ||
		string(recs[0].Body) != "small" {
		t.Fatalf("queue holds %d records, want only the small one", len(recs))
	}
}
