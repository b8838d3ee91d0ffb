package process_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/message"
)

// nativeProducer starts a native producer (cmd/internal/client/producer) on the
// given name servers with its own client instance; it is closed when the
// test ends.
func nativeProducer(t testing.TB, namesrv []string, opts ...producer.Option) *producer.Producer {
	t.Helper()
	all := append([]producer.Option{
		producer.WithNameServers(namesrv...),
		producer.WithInstanceName(processtest.Unique("native")),
	}, opts...)
	p, err := producer.New(all...)
	if err != nil {
		t.Fatalf("new native producer: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// nativeCtx bounds a test's sends, so a bug cannot hang the test.
func nativeCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// sent is what the test expects a consumer to receive for one body.
type sent struct {
	msg    *producer.Message
	res    *producer.SendResult // nil for oneway
	offID  string               // offset id (for batch members)
	dueMs  int64                // timer messages: not stored before
	stored bool                 // res describes the stored copy (not a timer's wheel copy)
}

// TestNativeProducerEndToEnd sends with every mode of the native
// producer to a real wheelmq broker and checks, with the official Go push
// consumer, that bodies, properties and ids arrive intact and that each
// SendResult describes what was stored.
func TestNativeProducerEndToEnd(t *testing.T) {
	t.Parallel() // its own broker; waits more than it computes: overlaps with the package's other parallel tests
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("native")
	processtest.CreateTopic(t, n, topic, 4)
	ns := []string{n.NamesrvAddr()}
	p := nativeProducer(t, ns, producer.WithSendTimeout(5*time.Second))
	pj := nativeProducer(t, ns, producer.WithSendTimeout(5*time.Second), producer.WithJSONHeaders())
	ctx := nativeCtx(t)
	want := map[string]*sent{}
	var mu sync.Mutex
	add := func(s *sent) {
		mu.Lock()
		defer mu.Unlock()
		want[string(s.msg.Body)] = s
	}
	newMsg := func(kind string, i int) *producer.Message {
		return producer.NewMessage(topic, []byte(fmt.Sprintf("%s-%d", kind, i))).
			WithTag("tag-"+kind).WithKeys(fmt.Sprint("key-", kind, i), "second").WithProperty("seq", fmt.Sprint(i))
	}

	for i := range 8 {
		m := newMsg("sync", i)
		pp := p
		if i%4 == 3 {
			pp, m = pj, newMsg("json", i)
		}
		res, err := pp.Send(ctx, m)
		if err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
		add(&sent{msg: m, res: res, offID: res.OffsetMsgID, stored: true})
	}
	var wg sync.WaitGroup
	for i := range 8 {
		m := newMsg("async", i)
		wg.Add(1)
		if err := p.SendAsync(ctx, m, func(res *producer.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("async %d: %v", i, err)
				return
			}
			add(&sent{msg: m, res: res, offID: res.OffsetMsgID, stored: true})
		}); err != nil {
			t.Fatalf("async %d: %v", i, err)
		}
	}
	wg.Wait()
	for i := range 4 {
		m := newMsg("oneway", i)
		if err := p.SendOneway(ctx, m); err != nil {
			t.Fatalf("oneway %d: %v", i, err)
		}
		add(&sent{msg: m})
	}
	var batch []*producer.Message
	for i := range 5 {
		batch = append(batch, newMsg("batch", i))
	}
	bres, err := p.SendBatch(ctx, batch...)
	if err != nil {
		t.Fatalf("batch: %v", err)
	}
	ids, offIDs := bres.MsgIDs(), strings.Split(bres.OffsetMsgID, ",")
	if len(ids) != 5 || len(offIDs) != 5 {
		t.Fatalf("batch result %+v", bres)
	}
	for i, m := range batch {
		r := *bres
		r.MsgID, r.QueueOffset = ids[i], bres.QueueOffset+int64(i)
		add(&sent{msg: m, res: &r, offID: offIDs[i], stored: true})
	}
	big := producer.NewMessage(topic, []byte(strings.Repeat("compress me please ", 4000))).WithTag("big")
	res, err := p.Send(ctx, big)
	if err != nil {
		t.Fatalf("compressed: %v", err)
	}
	add(&sent{msg: big, res: res, offID: res.OffsetMsgID, stored: true})
	start := time.Now()
	delayed := newMsg("delay", 0).WithDelay(1500 * time.Millisecond)
	res, err = p.Send(ctx, delayed)
	if err != nil {
		t.Fatalf("timer (delay): %v", err)
	}
	add(&sent{msg: delayed, res: res, dueMs: start.Add(1500 * time.Millisecond).UnixMilli()})
	due := time.Now().Add(2 * time.Second)
	at := newMsg("deliverat", 0).WithDeliverAt(due)
	if res, err = p.Send(ctx, at); err != nil {
		t.Fatalf("timer (deliver at): %v", err)
	}
	add(&sent{msg: at, res: res, dueMs: due.UnixMilli()})

	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	if !rec.WaitFor(len(want), 60*time.Second) {
		t.Fatalf("received %d of %d messages", rec.Len(), len(want))
	}
	got := map[string]bool{}
	for _, m := range rec.Snapshot() {
		body := string(m.Body)
		s, ok := want[body]
		if !ok {
			t.Fatalf("unexpected message %.40q", body)
		}
		if got[body] {
			continue // at-least-once: a redelivery is fine
		}
		got[body] = true
		checkDelivered(t, m, s)
	}
	if len(got) != len(want) {
		t.Fatalf("received %d distinct messages, want %d", len(got), len(want))
	}
}

// checkDelivered compares a consumed message with what was sent.
func checkDelivered(t *testing.T, m *primitive.MessageExt, s *sent) {
	t.Helper()
	name := fmt.Sprintf("%.20q", m.Body)
	for k, v := range s.msg.Properties() {
		if message.PropTimerDelayMS == k || message.PropTimerDeliverMS == k {
			continue // the broker's timer bookkeeping may rewrite these
		}
		if got := m.GetProperty(k); got != v {
			t.Errorf("%s: property %s = %q, want %q", name, k, got, v)
		}
	}
	if !bytes.Equal(m.Body, s.msg.Body) {
		t.Errorf("%s: body differs", name)
	}
	if uniq := m.GetProperty(message.PropUniqKey); uniq == "" || m.MsgId != uniq {
		t.Errorf("%s: MsgId %q, UNIQ_KEY %q", name, m.MsgId, uniq)
	}
	if len(s.msg.Body) >= producer.DefaultCompressThreshold && m.SysFlag&message.SysFlagCompressed == 0 {
		t.Errorf("%s: a %d-byte body was stored uncompressed (sysFlag %#x)", name, len(s.msg.Body), m.SysFlag)
	}
	if s.res != nil && (m.MsgId != s.res.MsgID || s.res.Queue.Topic != m.Topic || s.res.Status != producer.SendOK) {
		t.Errorf("%s: consumed id %s topic %s, send result %+v", name, m.MsgId, m.Topic, s.res)
	}
	if s.stored && (m.OffsetMsgId != s.offID || m.Queue.QueueId != int(s.res.Queue.ID) || m.QueueOffset != s.res.QueueOffset) {
		t.Errorf("%s: stored at %s queue %d offset %d, send result said %s queue %d offset %d",
			name, m.OffsetMsgId, m.Queue.QueueId, m.QueueOffset, s.offID, s.res.Queue.ID, s.res.QueueOffset)
	}
	if s.dueMs > 0 && m.StoreTimestamp < s.dueMs {
		t.Errorf("%s: delivered (stored) at %d, before its due time %d", name, m.StoreTimestamp, s.dueMs)
	}
	if s.dueMs > 0 && s.res.OffsetMsgID == m.OffsetMsgId {
		t.Errorf("%s: a timer message was stored directly, not through the timer", name)
	}
}
