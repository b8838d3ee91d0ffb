package producer

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

func TestNotAvailableFor(t *testing.T) {
	ms := time.Millisecond
	tests := []struct{ latency, want time.Duration }{
		{0, 0}, {49 * ms, 0}, {50 * ms, 0}, {99 * ms, 0}, {100 * ms, 0}, {549 * ms, 0},
		{550 * ms, 2000 * ms}, {1799 * ms, 2000 * ms}, {1800 * ms, 5000 * ms}, {2999 * ms, 5000 * ms},
		{3000 * ms, 6000 * ms}, {4999 * ms, 6000 * ms}, {5000 * ms, 10000 * ms}, {14999 * ms, 10000 * ms},
		{15000 * ms, 30000 * ms}, {time.Hour, 30000 * ms},
	}
	for _, tt := range tests {
		if got := NotAvailableFor(tt.latency); got != tt.want {
			t.Errorf("NotAvailableFor(%v) = %v, want %v", tt.latency, got, tt.want)
		}
	}
}

func TestFaultTable(t *testing.T) {
	var f faultTable
	now := time.Unix(1000, 0)
	f.update("fast", 10*time.Millisecond, false, now)
	f.update("slow", 2*time.Second, false, now)     // 5 s
	f.update("failed", time.Millisecond, true, now) // isolated 30 s
	f.update("slower", 6*time.Second, false, now)   // 10 s
	tests := []struct {
		broker string
		at     time.Duration
		want   bool
	}{
		{"fast", 0, true}, {"unknown", 0, true},
		{"slow", 0, false}, {"slow", 4999 * time.Millisecond, false}, {"slow", 5 * time.Second, true},
		{"failed", 29 * time.Second, false}, {"failed", IsolationDuration, true},
		{"slower", 9 * time.Second, false}, {"slower", 10 * time.Second, true},
	}
	for _, tt := range tests {
		if got := f.available(tt.broker, now.Add(tt.at)); got != tt.want {
			t.Errorf("available(%s, +%v) = %v, want %v", tt.broker, tt.at, got, tt.want)
		}
	}
	// A fast send makes a slow broker available again at once.
	f.update("slow", time.Millisecond, false, now.Add(time.Second))
	if !f.available("slow", now.Add(time.Second)) {
		t.Error("a fast send did not clear the slow broker")
	}
	qs := []Queue{{Broker: "failed"}, {Broker: "slower"}, {Broker: "slow2"}}
	f.update("slow2", 20*time.Second, false, now) // 30 s
	if got := f.soonest(qs, ""); got != "slower" {
		t.Errorf("soonest = %s, want slower", got)
	}
	if got := f.soonest(qs[:1], "failed"); got != "failed" {
		t.Errorf("soonest with only the avoided broker = %s", got)
	}
}

// queues builds n queues per broker.
func queues(n int32, brokers ...string) []Queue {
	var out []Queue
	for _, b := range brokers {
		for id := range n {
			out = append(out, Queue{Topic: "T", Broker: b, ID: id})
		}
	}
	return out
}

func TestRoundRobin(t *testing.T) {
	qs := queues(3, "a", "b")
	now := time.Now()
	t.Run("even spread", func(t *testing.T) {
		var rr roundRobin
		count := map[Queue]int{}
		for range 600 {
			count[rr.pick("T", qs, "", nil, now)]++
		}
		for _, q := range qs {
			if count[q] != 100 {
				t.Fatalf("queue %v picked %d times of 600, want 100: %v", q, count[q], count)
			}
		}
	})
	t.Run("skips the last failed broker", func(t *testing.T) {
		var rr roundRobin
		for range 100 {
			if q := rr.pick("T", qs, "a", nil, now); q.Broker != "b" {
				t.Fatalf("picked %v after a failed", q)
			}
		}
		if q := rr.pick("T", queues(2, "a"), "a", nil, now); q.Broker != "a" {
			t.Fatalf("only broker a: picked %v", q)
		}
	})
	t.Run("fault tolerance", func(t *testing.T) {
		var rr roundRobin
		var f faultTable
		f.update("a", 0, true, now)
		for range 100 {
			if q := rr.pick("T", qs, "", &f, now); q.Broker != "b" {
				t.Fatalf("picked %v while a is isolated", q)
			}
		}
		f.update("b", 20*time.Second, false, now) // b unavailable for 30 s too, but from later
		f.update("a", 0, true, now.Add(-time.Second))
		for range 20 {
			if q := rr.pick("T", qs, "", &f, now); q.Broker != "a" {
				t.Fatalf("picked %v; a is available sooner than b", q)
			}
		}
		if q := rr.pick("T", qs, "", &f, now.Add(time.Minute)); q.Topic != "T" {
			t.Fatalf("picked %v once both are back", q)
		}
	})
	t.Run("separate counters per topic", func(t *testing.T) {
		var rr roundRobin
		first := rr.pick("X", qs, "", nil, now)
		for range 5 {
			rr.pick("Y", qs, "", nil, now)
		}
		second := rr.pick("X", qs, "", nil, now)
		if (indexOf(qs, first)+1)%len(qs) != indexOf(qs, second) {
			t.Fatalf("topic X went %v then %v: another topic's sends moved its counter", first, second)
		}
	})
}

func indexOf(qs []Queue, q Queue) int {
	for i, x := range qs {
		if x == q {
			return i
		}
	}
	return -1
}

func TestHashByKey(t *testing.T) {
	qs := queues(4, "a", "b")
	s := HashByKey()
	got := map[string]Queue{}
	for range 3 {
		for _, k := range []string{"k1", "k2", "k3", "order-77"} {
			q := s.Select(NewMessage("T", nil).WithShardingKey(k), qs, "a")
			if prev, ok := got[k]; ok && prev != q {
				t.Fatalf("key %s: %v then %v", k, prev, q)
			}
			got[k] = q
			if q2 := s.Select(NewMessage("T", nil).WithKeys(k, "other"), qs, ""); q2 != q {
				t.Fatalf("key %s as first KEYS went to %v, as sharding key to %v", k, q2, q)
			}
		}
	}
}

func TestLimiter(t *testing.T) {
	l := newLimiter(2, 100)
	ctx := context.Background()
	n1, err := l.acquire(ctx, 60)
	if err != nil || n1 != 60 {
		t.Fatal(n1, err)
	}
	if _, ok := l.tryAcquire(50); ok {
		t.Fatal("110 bytes of 100 granted")
	}
	n2, ok := l.tryAcquire(40)
	if !ok {
		t.Fatal("100 bytes of 100 refused")
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := l.acquire(short, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third permit of 2: %v", err)
	}
	// Waiters are served in order: a big one first, then a small one.
	got := make(chan int, 2)
	go func() { n, _ := l.acquire(ctx, 1000); got <- n }() // clamped to 100: waits for everything
	for {
		l.mu.Lock()
		w := len(l.waiters)
		l.mu.Unlock()
		if w == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	go func() { n, _ := l.acquire(ctx, 1); got <- n }()
	for {
		l.mu.Lock()
		w := len(l.waiters)
		l.mu.Unlock()
		if w == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	l.release(n2)
	select {
	case n := <-got:
		t.Fatalf("a waiter got %d bytes while 60 are still taken", n)
	default:
	}
	l.release(n1)
	if n := <-got; n != 100 {
		t.Fatalf("first waiter got %d, want the big one (100)", n)
	}
	l.release(100)
	if n := <-got; n != 1 {
		t.Fatalf("second waiter got %d", n)
	}
	l.release(1)
	if c, b := l.inUse(); c != 0 || b != 0 {
		t.Fatalf("in use %d / %d", c, b)
	}
}

// offlineProducer is a producer whose name server is never contacted.
func offlineProducer(t *testing.T, opts ...Option) *Producer {
	t.Helper()
	p, err := New(append([]Option{WithNameServers("127.0.0.1:1"), WithInstanceName(t.Name())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestCompression(t *testing.T) {
	p := offlineProducer(t)
	random := make([]byte, 8<<10)
	_, _ = rand.Read(random)
	tests := []struct {
		name       string
		body       []byte
		compressed bool
	}{
		{"small", bytes.Repeat([]byte("a"), DefaultCompressThreshold-1), false},
		{"at threshold", bytes.Repeat([]byte("a"), DefaultCompressThreshold), true},
		{"large text", []byte(strings.Repeat("hello wheelmq ", 50000)), true},
		{"incompressible", random, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr := &prepared{}
			if err := p.prepareSingle(pr, NewMessage("T", tt.body), time.Now()); err != nil {
				t.Fatal(err)
			}
			if got := pr.sysFlag&message.SysFlagCompressed != 0; got != tt.compressed {
				t.Fatalf("compressed %v, want %v", got, tt.compressed)
			}
			if !tt.compressed {
				if pr.sysFlag != 0 || !bytes.Equal(pr.body, tt.body) {
					t.Fatalf("sysFlag %#x, body changed", pr.sysFlag)
				}
				return
			}
			if pr.sysFlag != message.SysFlagCompressed|message.SysFlagCompressionZLIB || len(pr.body) >= len(tt.body) {
				t.Fatalf("sysFlag %#x, %d -> %d bytes", pr.sysFlag, len(tt.body), len(pr.body))
			}
			r, err := zlib.NewReader(bytes.NewReader(pr.body))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(plain, tt.body) {
				t.Fatalf("inflated %d bytes, %v", len(plain), err)
			}
			if req := onWire(t, p.request(pr, Queue{Topic: "T", Broker: "b", ID: 1}, time.Now())); req.Field("f") != "769" {
				t.Fatalf("request sysFlag %q, want 769 (0x301)", req.Field("f"))
			}
		})
	}
}

func TestRequestFields(t *testing.T) {
	p := offlineProducer(t, WithGroup("pg"))
	at := time.UnixMilli(1_900_000_000_123)
	m := NewMessage("T", []byte("body")).WithTag("tg").WithKeys("k1", "k2").WithProperty("p", "v").WithDeliverAt(at)
	m.Flag = 7
	pr := &prepared{}
	if err := p.prepareSingle(pr, m, time.Now()); err != nil {
		t.Fatal(err)
	}
	req := onWire(t, p.request(pr, Queue{Topic: "T", Broker: "broker-x", ID: 3}, time.Now()))
	want := map[string]string{"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "0", "h": "7",
		"j": "0", "k": "false", "m": "false", "n": "broker-x"}
	for k, v := range want {
		if req.Field(k) != v {
			t.Errorf("field %s = %q, want %q", k, req.Field(k), v)
		}
	}
	if req.Code != remoting.SendMessageV2 || req.Serialize != remoting.SerializeRocketMQ || string(req.Body) != "body" {
		t.Errorf("code %d serialize %v body %q", req.Code, req.Serialize, req.Body)
	}
	props := message.DecodeProperties([]byte(req.Field("i")))
	wantProps := map[string]string{"TAGS": "tg", "KEYS": "k1 k2", "p": "v", "WAIT": "true",
		"TIMER_DELIVER_MS": "1900000000123", "UNIQ_KEY": pr.uniq[0]}
	if len(props) != len(wantProps) {
		t.Errorf("properties %v, want %v", props, wantProps)
	}
	for k, v := range wantProps {
		if props[k] != v {
			t.Errorf("property %s = %q, want %q", k, props[k], v)
		}
	}
	if len(pr.uniq[0]) != 32 || strings.ToUpper(pr.uniq[0]) != pr.uniq[0] {
		t.Errorf("UNIQ_KEY %q, want 32 upper-case hex characters", pr.uniq[0])
	}
	// A caller's UNIQ_KEY is kept (idempotent re-sends).
	pr2 := &prepared{}
	_ = p.prepareSingle(pr2, NewMessage("T", []byte("b")).WithProperty(message.PropUniqKey, "MYID"), time.Now())
	if pr2.uniq[0] != "MYID" {
		t.Errorf("caller's UNIQ_KEY replaced by %q", pr2.uniq[0])
	}
}

// onWire encodes req and decodes it back: the request as a broker sees it.
func onWire(t *testing.T, req *remoting.Command) *remoting.Command {
	t.Helper()
	frame, err := remoting.EncodeFrame(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remoting.DecodeFrame(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestTimerProperties(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_000)
	m := NewMessage("T", []byte("x")).WithDelay(1500 * time.Millisecond)
	if m.Property(message.PropTimerDelayMS) != "1500" || !m.IsTimer() {
		t.Fatalf("WithDelay: %v", m.Properties())
	}
	m.WithDeliverAt(at)
	if m.Property(message.PropTimerDelayMS) != "" || m.Property(message.PropTimerDeliverMS) != "1800000000000" {
		t.Fatalf("WithDeliverAt after WithDelay: %v", m.Properties())
	}
	m.WithDelay(time.Minute)
	if m.Property(message.PropTimerDeliverMS) != "" || m.Property(message.PropTimerDelayMS) != "60000" {
		t.Fatalf("WithDelay after WithDeliverAt: %v", m.Properties())
	}
	if NewMessage("T", []byte("x")).IsTimer() {
		t.Fatal("a plain message is a timer message")
	}
}

func TestValidation(t *testing.T) {
	big := make([]byte, DefaultMaxMessageSize+1)
	tests := []struct {
		name string
		msgs []*Message // one: Send; several: SendBatch
		rule Rule
	}{
		{"blank topic", []*Message{NewMessage(" ", []byte("x"))}, RuleTopicBlank},
		{"bad char", []*Message{NewMessage("a.b", []byte("x"))}, RuleTopicChars},
		{"long topic", []*Message{NewMessage(strings.Repeat("t", 128), []byte("x"))}, RuleTopicLength},
		{"TBW102", []*Message{NewMessage("TBW102", []byte("x"))}, RuleTopicForbidden},
		{"schedule topic", []*Message{NewMessage("SCHEDULE_TOPIC_XXXX", []byte("x"))}, RuleTopicForbidden},
		{"rmq_sys", []*Message{NewMessage("rmq_sys_wheel_timer", []byte("x"))}, RuleTopicForbidden},
		{"empty body", []*Message{NewMessage("T", nil)}, RuleBodyEmpty},
		{"nil message", []*Message{nil}, RuleBodyEmpty},
		{"body too large", []*Message{NewMessage("T", big)}, RuleBodyTooLarge},
		{"separator in value", []*Message{NewMessage("T", []byte("x")).WithProperty("k", "a\x01b")}, RuleProperty},
		{"separator in key", []*Message{NewMessage("T", []byte("x")).WithProperty("k\x02", "v")}, RuleProperty},
		{"properties too large", []*Message{NewMessage("T", []byte("x")).WithProperty("k", strings.Repeat("v", 32760))}, RulePropertiesTooLarge},
		{"negative delay", []*Message{NewMessage("T", []byte("x")).WithDelay(-time.Second)}, RuleTimer},
		{"bad delay level", []*Message{NewMessage("T", []byte("x")).WithProperty("DELAY", "soon")}, RuleTimer},
		{"mixed topics", []*Message{NewMessage("T", []byte("x")), NewMessage("U", []byte("y"))}, RuleBatchTopics},
		{"timer in batch", []*Message{NewMessage("T", []byte("x")), NewMessage("T", []byte("y")).WithDelay(time.Second)}, RuleBatchTimer},
		{"bad member", []*Message{NewMessage("T", []byte("x")), NewMessage("T", nil)}, RuleBodyEmpty},
		{"batch too large", []*Message{NewMessage("T", big[:3<<20]), NewMessage("T", big[:2<<20])}, RuleBatchTooLarge},
	}
	p := offlineProducer(t)
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if len(tt.msgs) == 1 {
				_, err = p.Send(ctx, tt.msgs[0])
			} else {
				_, err = p.SendBatch(ctx, tt.msgs...)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Rule != tt.rule || !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("err %v, want a ValidationError with rule %s", err, tt.rule)
			}
			if !strings.Contains(err.Error(), string(tt.rule)) {
				t.Fatalf("error text %q does not name the rule", err)
			}
		})
	}
	if _, err := p.SendBatch(ctx); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("empty batch: %v", err)
	}
	if err := p.SendAsync(ctx, NewMessage("", []byte("x")), func(*SendResult, error) { t.Error("callback ran") }); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("async: %v", err)
	}
	if err := p.SendOneway(ctx, NewMessage("T", nil)); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("oneway: %v", err)
	}
}

func TestOptionsAreChecked(t *testing.T) {
	tests := []Option{WithGroup(""), WithSendTimeout(0), WithRetries(-1), WithMaxInflight(0, 1),
		WithMaxMessageSize(0), WithCompression(4096, 10), WithCompression(0, 5), WithCallbackWorkers(0)}
	for i, o := range tests {
		if _, err := New(WithNameServers("127.0.0.1:1"), o); err == nil || !strings.Contains(err.Error(), "producer options") {
			t.Errorf("option %d: %v", i, err)
		}
	}
}

// TestLimiterConcurrent has goroutines take and return permits of various
// sizes through both paths: the bounds always hold, every acquire is
// served, and everything comes back.
func TestLimiterConcurrent(t *testing.T) {
	const maxCount, maxBytes = 8, 1000
	l := newLimiter(maxCount, maxBytes)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				size := (g*131 + i*17) % 700
				n, ok := l.tryAcquire(size)
				if !ok {
					var err error
					if n, err = l.acquire(ctx, size); err != nil {
						errs <- err
						return
					}
				}
				if c, b := l.inUse(); c > maxCount || b > maxBytes {
					errs <- fmt.Errorf("in use %d permits, %d bytes: over the bounds", c, b)
					return
				}
				l.release(n)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if c, b := l.inUse(); c != 0 || b != 0 || l.waiting.Load() != 0 {
		t.Fatalf("after all releases: %d permits, %d bytes, %d waiting", c, b, l.waiting.Load())
	}
}
