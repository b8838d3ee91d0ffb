package grpctest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestProducerNormal sends plain messages with the Go v5 SDK and reads
// them back over remoting: properties as RocketMQ's proxy stores them,
// spread round robin over the queues.
func TestProducerNormal(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_normal")
	processtest.CreateTopic(t, n, topic, 4)
	p := producer(t, sdkConfig(n, ""), []string{topic})
	ids := map[string]int{}
	for i := range 8 {
		m := &rmq.Message{Topic: topic, Body: []byte("body-" + strconv.Itoa(i))}
		m.SetTag("tagA")
		m.SetKeys("k"+strconv.Itoa(i), "common")
		m.AddProperty("color", "blue")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rs, err := p.Send(ctx, m)
		cancel()
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if len(rs) != 1 || rs[0].MessageID == "" {
			t.Fatalf("send %d: receipts %+v", i, rs)
		}
		ids[rs[0].MessageID] = i
	}
	recs := storedRecords(t, n, topic, 4, 8) // the consume-queue entries follow the answers
	got := byUniq(recs)
	for id, i := range ids {
		r, ok := got[id]
		if !ok {
			t.Fatalf("message %d (%s) not stored", i, id)
		}
		props := message.DecodeProperties(r.Properties)
		if string(r.Body) != "body-"+strconv.Itoa(i) || props[message.PropTags] != "tagA" ||
			props[message.PropKeys] != fmt.Sprintf("k%d common", i) || props["color"] != "blue" {
			t.Fatalf("message %d stored as body %q props %v", i, r.Body, props)
		}
	}
	used := 0
	for _, rs := range recs {
		if len(rs) > 0 {
			used++
		}
	}
	if used < 4 {
		t.Fatalf("8 sends used %d of 4 queues: want round robin over all", used)
	}
}

// TestProducerFIFO sends three message groups: each group's messages land
// on one queue, in send order, with __SHARDINGKEY set.
func TestProducerFIFO(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_fifo")
	processtest.CreateTopic(t, n, topic, 4)
	p := producer(t, sdkConfig(n, ""), []string{topic})
	groups := []string{"g-a", "g-b", "g-c"}
	for i := range 15 {
		g := groups[i%3]
		m := &rmq.Message{Topic: topic, Body: []byte(g + "-" + strconv.Itoa(i/3))}
		m.SetMessageGroup(g)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := p.Send(ctx, m)
		cancel()
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	recs := storedRecords(t, n, topic, 4, 15)
	queueOf := map[string]int32{}
	next := map[string]int{}
	for q, rs := range recs {
		for _, r := range rs {
			g, _ := message.LookupProperty(r.Properties, message.PropShardingKey)
			if prev, ok := queueOf[g]; ok && prev != q {
				t.Fatalf("group %s on queues %d and %d", g, prev, q)
			}
			queueOf[g] = q
			if want := g + "-" + strconv.Itoa(next[g]); string(r.Body) != want {
				t.Fatalf("queue %d: got %q, want %q (order)", q, r.Body, want)
			}
			next[g]++
		}
	}
	for _, g := range groups {
		if next[g] != 5 {
			t.Fatalf("group %s: %d of 5 messages stored", g, next[g])
		}
	}
}

// TestProducerTimer sends a message due in 3 s: it is not in its topic
// before then, and is after.
func TestProducerTimer(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_timer")
	processtest.CreateTopic(t, n, topic, 2)
	p := producer(t, sdkConfig(n, ""), []string{topic})
	due := time.Now().Add(3 * time.Second)
	m := &rmq.Message{Topic: topic, Body: []byte("later")}
	m.SetDelayTimestamp(due)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	rs, err := p.Send(ctx, m)
	cancel()
	if err != nil {
		t.Fatalf("send timer message: %v", err)
	}
	id := rs[0].MessageID
	for {
		_, found := byUniq(allRecords(t, n, topic, 2))[id]
		now := time.Now()
		if found {
			if now.Before(due) {
				t.Fatalf("timer message delivered %s early", due.Sub(now))
			}
			break
		}
		if now.After(due.Add(15 * time.Second)) {
			t.Fatal("timer message not delivered within 15 s of its due time")
		}
		time.Sleep(200 * time.Millisecond)
	}
	r := byUniq(allRecords(t, n, topic, 2))[id]
	if v, _ := message.LookupProperty(r.Properties, message.PropTimerDeliverMS); v != strconv.FormatInt(due.UnixMilli(), 10) {
		t.Fatalf("TIMER_DELIVER_MS %q, want %d", v, due.UnixMilli())
	}
}
