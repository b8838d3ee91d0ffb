package process_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/message"
)

// scrape sums the samples of one metric on the /metrics page whose name and
// labels start with sample.
func scrape(t *testing.T, addr, sample string) float64 {
	t.Helper()
	body := metricsPage(t, addr)
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + `(?:[,{][^}]*\})? ([0-9.e+-]+)$`)
	sum := 0.0
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		sum += v
	}
	return sum
}

// TestTimerStagesSurviveFaults makes every timer stage (and the commitlog
// writer) fail mid-batch once: each is restarted by its supervisor, every
// timer message is delivered exactly once, none early, and the restarts show
// in /metrics. A fault armed for dequeue_message hits whichever of its
// workers takes a batch first; "workers" fails each of the two workers
// once, one while a batch of the other may be waiting in dequeue_put for
// its turn in release order.
func TestTimerStagesSurviveFaults(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	for _, s := range []string{timer.StageEnqueueGet, timer.StageEnqueuePut, timer.StageDequeueGet,
		timer.StageDequeueMessage, timer.StageDequeuePut, timer.StageFlush, writer.StageName} {
		t.Run(s, func(t *testing.T) { faultRun(t, []string{s}) })
	}
	t.Run("workers", func(t *testing.T) {
		faultRun(t, []string{timer.DequeueWorker(0), timer.DequeueWorker(1)})
	})
	t.Run("all", func(t *testing.T) {
		faultRun(t, []string{timer.StageEnqueueGet, timer.StageEnqueuePut, timer.StageDequeueGet,
			timer.StageDequeueMessage, timer.StageDequeuePut, timer.StageFlush, writer.StageName})
	})
}

// sendLead is how far ahead faultRun's first timer is due: 1.5 s, or
// twice what sends sends take at the pace of 20 plain sends to a topic of
// their own (a loaded machine sends slower; a timer whose send returns
// after its due time is no timer), at most 20 s.
func sendLead(t *testing.T, n *process.Node, p interface {
	SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
}, sends int) time.Duration {
	t.Helper()
	topic := processtest.Unique("tfault-pace")
	processtest.CreateTopic(t, n, topic, 1)
	const warm = 20
	began := time.Now()
	for i := range warm {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(strconv.Itoa(i)))); err != nil {
			t.Fatalf("pace send %d: %v", i, err)
		}
	}
	lead := min(max(1500*time.Millisecond, 2*time.Since(began)*time.Duration(sends)/warm), 20*time.Second)
	t.Logf("first timer due %s after the sends begin", lead.Round(time.Millisecond))
	return lead
}

// restarts sums wheelmq_actor_restarts_total over the stages a fault armed
// for name can hit: the stage itself, or every dequeue_message worker.
func restarts(t *testing.T, addr, name string) float64 {
	if name != timer.StageDequeueMessage {
		return scrape(t, addr, `wheelmq_actor_restarts_total{stage="`+name+`"}`)
	}
	sum := 0.0
	for i := range timer.MaxDequeueWorkers {
		sum += scrape(t, addr, `wheelmq_actor_restarts_total{stage="`+timer.DequeueWorker(i)+`"}`)
	}
	return sum
}

// faultRun arms the named stages once each and checks exactly-once,
// never-early delivery and the restart metrics.
func faultRun(t *testing.T, stages []string) {
	faults := &timer.Faults{}
	n := processtest.Start(t, processtest.Options{Metrics: true, Mutate: func(c *pipeline.Config) {
		c.TimerFaults = faults
		c.TimerPutTimeout = time.Second
	}})
	topic := processtest.Unique("tfault")
	processtest.CreateTopic(t, n, topic, 2)
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	p := processtest.Producer(t, n.NamesrvAddr())
	const sends = 300
	lead := sendLead(t, n, p, sends) // before the faults are armed
	before := scrape(t, n.MetricsAddr(), "wheelmq_timer_delivered_total")
	enqBefore := scrape(t, n.MetricsAddr(), "wheelmq_timer_enqueued_total")
	lateBefore := scrape(t, n.MetricsAddr(), "wheelmq_timer_lateness_seconds_count")

	armWriter := false
	for _, s := range stages {
		if s == writer.StageName {
			armWriter = true // armed once the sends are done
			continue
		}
		faults.Arm(s)
	}
	due := map[string]int64{}
	timed := 0 // messages still in the future when their send returned: surely timers
	start := time.Now().Add(lead)
	for i := 0; i < sends; i++ {
		at := start.Add(time.Duration(i%30) * 20 * time.Millisecond)
		body := fmt.Sprintf("f-%d", i)
		m := primitive.NewMessage(topic, []byte(body))
		m.WithDelayTimestamp(at)
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if time.Now().Before(at) {
			timed++ // on a slow machine the last ones may be due already and go straight to the topic
		}
		due[body] = at.UnixMilli()
	}
	if timed < len(due)/2 {
		t.Fatalf("only %d of %d sends returned before their due time: the machine is too slow for this test", timed, len(due))
	}
	if armWriter {
		faults.Arm(writer.StageName) // fails while timers are written back
	}
	if !rec.WaitFor(len(due), 60*time.Second) {
		stored := int64(0)
		for q := 0; q < 2; q++ {
			if cq := n.Broker().Store().Queues.Lookup(topic, int32(q)); cq != nil {
				stored += cq.MaxOffset()
			}
		}
		inLog, distinct := 0, map[string]bool{}
		cl := n.Broker().Store().CommitLog
		for off := cl.MinOffset(); ; {
			recs, offs, next, err := cl.ReadBlock(off, 0)
			if err != nil {
				break
			}
			_ = offs
			for _, r := range recs {
				if tp, _ := message.PeekTopic(r); tp == topic {
					inLog++
					b, _ := message.PeekBody(r)
					distinct[string(b)] = true
				}
			}
			off = next
		}
		t.Logf("commitlog holds %d records of the topic, %d distinct bodies", inLog, len(distinct))
		t.Fatalf("received %d of %d timer messages after faults (in the topic's queues %d, delivered_total %v, pending %v, skipped %v, duplicates %v)",
			rec.Len(), len(due), stored, scrape(t, n.MetricsAddr(), "wheelmq_timer_delivered_total")-before,
			scrape(t, n.MetricsAddr(), "wheelmq_timer_pending"), scrape(t, n.MetricsAddr(), "wheelmq_timer_skipped_total"),
			scrape(t, n.MetricsAddr(), "wheelmq_timer_duplicates_total"))
	}
	time.Sleep(time.Second)
	seen := map[string]int{}
	for _, m := range rec.Snapshot() {
		body := string(m.Body)
		seen[body]++
		if m.StoreTimestamp < due[body] {
			t.Fatalf("%s delivered early: %d < %d", body, m.StoreTimestamp, due[body])
		}
	}
	for body := range due {
		if seen[body] != 1 {
			t.Fatalf("%s delivered %d times", body, seen[body])
		}
	}
	armed := map[string]int{}
	for _, s := range stages {
		armed[s]++
	}
	fired := 0
	for s, want := range armed {
		if pending := faults.Pending(s); pending > 0 {
			// A dequeue worker gets batches only when the timer releases
			// them to it: on a loaded machine one worker may take them all
			// and the other never meets its fault. Every other stage must.
			if !strings.HasPrefix(s, timer.StageDequeueMessage+"_") {
				t.Errorf("stage %s: %d of its %d faults never fired", s, pending, want)
			}
			want -= pending
		}
		fired += want
		if v := restarts(t, n.MetricsAddr(), s); v < float64(want) {
			t.Errorf("stage %s: restarts_total %v, want >= %d", s, v, want)
		}
	}
	if fired == 0 {
		t.Errorf("none of the faults armed for %v fired", stages)
	}
	if got := scrape(t, n.MetricsAddr(), "wheelmq_timer_delivered_total") - before; got < float64(timed) {
		t.Errorf("wheelmq_timer_delivered_total moved by %v, want >= %d", got, timed)
	}
	if got := scrape(t, n.MetricsAddr(), "wheelmq_timer_enqueued_total") - enqBefore; got < float64(timed) {
		t.Errorf("wheelmq_timer_enqueued_total moved by %v, want >= %d", got, timed)
	}
	if got := scrape(t, n.MetricsAddr(), "wheelmq_timer_lateness_seconds_count") - lateBefore; got < float64(timed) {
		t.Errorf("wheelmq_timer_lateness_seconds_count moved by %v, want >= %d", got, timed)
	}
	if got := scrape(t, n.MetricsAddr(), "wheelmq_timer_pending"); got != 0 {
		t.Errorf("wheelmq_timer_pending = %v after every timer was delivered", got)
	}
}
