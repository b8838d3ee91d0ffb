package grpctest

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestRecurringTimerOverGRPC: a WHEEL_SCHEDULE user property set with the
// Go v5 SDK makes a recurring timer as over remoting: a SimpleConsumer
// receives its fires with their own message ids, sequence numbers and the
// user properties; recalling it with its send receipt's recall handle
// after it fired stops it; a schedule that does not parse is refused and
// stores nothing.
func TestRecurringTimerOverGRPC(t *testing.T) {
	t.Parallel() // waits more than it computes
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_recur")
	processtest.CreateTopic(t, n, topic, 1)
	p := producer(t, sdkConfig(n, ""), []string{topic})
	c := simpleConsumer(t, sdkConfig(n, topic+"_cg"), topic, rmq.SUB_ALL)
	send := func(sched string) (*rmq.SendReceipt, error) {
		m := &rmq.Message{Topic: topic, Body: []byte("tick")}
		m.SetTag("t")
		m.AddProperty("app", "grpc")
		m.AddProperty(schedule.Prop, sched)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rs, err := p.Send(ctx, m)
		if err != nil {
			return nil, err
		}
		return rs[0], nil
	}
	if _, err := send("@every 100ms"); err == nil || !strings.Contains(err.Error(), "below the minimum") {
		t.Fatalf("an interval below the minimum: %v", err)
	}
	if _, err := send("CRON_TZ=Nowhere/Land * * * * *"); err == nil || !strings.Contains(err.Error(), "unknown time zone") {
		t.Fatalf("an unknown zone: %v", err)
	}
	if got := allRecords(t, n, topic, 1)[0]; len(got) != 0 {
		t.Fatalf("refused schedules stored %d messages", len(got))
	}
	r, err := send("@every 1s")
	if err != nil {
		t.Fatal(err)
	}
	if r.RecallHandle == "" {
		t.Fatal("a recurring timer's send receipt has no recall handle")
	}
	got := receiveUntil(t, c, 2, 10*time.Second, 15*time.Second)
	if len(got) < 2 {
		t.Fatalf("received %d fires, want 2", len(got))
	}
	ids := map[string]bool{}
	for _, m := range got {
		props := m.GetProperties()
		seq, _ := strconv.Atoi(props[schedule.PropSeq])
		if seq < 1 || props[schedule.PropOrigin] != r.MessageID || props["app"] != "grpc" || m.GetTag() == nil || *m.GetTag() != "t" {
			t.Fatalf("fire %s: properties %v", m.GetMessageId(), props)
		}
		if ids[m.GetMessageId()] || m.GetMessageId() == r.MessageID {
			t.Fatalf("fire %d reuses message id %s", seq, m.GetMessageId())
		}
		ids[m.GetMessageId()] = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.Ack(ctx, m); err != nil {
			t.Fatalf("ack: %v", err)
		}
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.Recall(ctx, topic, r.RecallHandle); err != nil {
		t.Fatalf("recall after the first fire: %v", err)
	}
	answered := time.Now().UnixMilli()
	time.Sleep(3 * time.Second) // fires that must not come
	for _, rec := range allRecords(t, n, topic, 1)[0] {
		due, _ := message.LookupProperty(rec.Properties, schedule.PropFireMs)
		if ms, _ := strconv.ParseInt(due, 10, 64); ms > answered+1000 {
			t.Fatalf("a fire due %d, after the recall answered at %d + 1 period", ms, answered)
		}
	}
	// The recall stored the schedule's stop record (docs/timer.md, "Stop
	// record layout"), found in the message index by the schedule's id.
	stop := stopRecord(t, n, r.MessageID)
	props := message.DecodeProperties(stop.Properties)
	if props[message.PropRealTopic] != topic || props[message.PropUniqKey] != r.MessageID || props[message.PropKeys] != "" ||
		props[schedule.PropOf] != "@every 1s" || len(stop.Body) != 0 || stop.QueueID != 0 {
		t.Fatalf("stop record: queue %d, properties %v, body %q", stop.QueueID, props, stop.Body)
	}
}

// stopRecord waits (10 s at most) for the message index to hold exactly
// one stop record of schedule origin and returns it.
func stopRecord(t *testing.T, n *process.Node, origin string) message.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := make(chan []message.Record, 1)
		n.Broker().Core().QueryMessages(broker.Caller{}, broker.MessageQuery{Topic: timer.StopTopic, Key: origin, Unique: true, End: math.MaxInt64},
			func(res *broker.QueryResult, err *broker.Error) {
				var recs []message.Record
				if err == nil {
					for _, raw := range res.Records {
						if m, _, derr := message.Decode(raw); derr == nil {
							recs = append(recs, m)
						}
					}
				}
				got <- recs
			})
		var recs []message.Record
		select {
		case recs = <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("stop record query not answered")
		}
		if len(recs) > 1 {
			t.Fatalf("%d stop records of %s, want 1", len(recs), origin)
		}
		if len(recs) == 1 {
			return recs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stop record of %s in the index", origin)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
