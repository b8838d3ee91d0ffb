package process_test

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// BenchmarkPrioritySend compares, in the same run against one in-process
// broker, the official Go client's sync sends (256-byte bodies, 32
// goroutines) of plain messages to a 4-queue topic with those of priority
// messages (priorities 0-3) to a 4-queue PRIORITY topic, which the broker
// checks and routes on its general send path, and reports both rates and
// their ratio (issue 28 asks >= 0.9). b.N counts the sends of each kind.
func BenchmarkPrioritySend(b *testing.B) {
	n := processtest.Start(b, processtest.Options{})
	plainTopic, prioTopic := processtest.Unique("bench_plain"), processtest.Unique("bench_prio")
	processtest.CreateTopic(b, n, plainTopic, 4)
	if r := processtest.Invoke(b, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": prioTopic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG",
		"attributes": "+message.type=PRIORITY"}, nil)); r.Code != remoting.Success {
		b.Fatalf("create PRIORITY topic: %d %s", r.Code, r.Remark)
	}
	processtest.WaitRoute(b, n.NamesrvAddr(), prioTopic)
	p := processtest.Producer(b, n.NamesrvAddr())
	b.ResetTimer()
	plain, prio, sent := sendRatio(b, p, plainTopic, prioTopic, b.N)
	b.StopTimer()
	b.ReportMetric(float64(sent)/plain.Seconds(), "plain_msgs/s")
	b.ReportMetric(float64(sent)/prio.Seconds(), "priority_msgs/s")
	b.ReportMetric(plain.Seconds()/prio.Seconds(), "priority/plain")
}

// sendRatio sends at least sends plain messages to plainTopic and as many
// priority messages (priorities 0-3) to prioTopic with the official Go
// client, sync, 256-byte bodies, 32 goroutines; the two kinds alternate in
// blocks of 512 sends (32 goroutines x 16), so that a busy neighbour on the
// machine slows both alike. It returns the time each kind took and the
// sends of each.
func sendRatio(tb testing.TB, p interface {
	SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
}, plainTopic, prioTopic string, sends int) (plain, prio time.Duration, sent int) {
	tb.Helper()
	body := bytes.Repeat([]byte("w"), 256)
	ctx := context.Background()
	msg := func(topic string, prio int) *primitive.Message {
		m := primitive.NewMessage(topic, body)
		if prio >= 0 {
			m.WithProperty(message.PropPriority, strconv.Itoa(prio))
		}
		return m
	}
	for _, m := range []*primitive.Message{msg(plainTopic, -1), msg(prioTopic, 0)} { // routes ready
		if _, err := p.SendSync(ctx, m); err != nil {
			tb.Fatal(err)
		}
	}
	block := func(topic string, prio bool) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for g := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 16 {
					pr := -1
					if prio {
						pr = (g + i) % 4
					}
					if _, err := p.SendSync(ctx, msg(topic, pr)); err != nil {
						tb.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	for sent < sends && !tb.Failed() {
		prio += block(prioTopic, true)
		plain += block(plainTopic, false)
		sent += 512
	}
	return plain, prio, sent
}
