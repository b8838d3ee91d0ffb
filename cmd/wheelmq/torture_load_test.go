package main

// The load of the crash torture test (torture_test.go): producers of plain
// and timer messages and a consumer that commits offsets, all over raw
// remoting connections, and the ledger where the test process records what
// the broker acknowledged.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

const (
	tortureQueues = 4
	tortureGroup  = "torture_consumer"
	// offsetFlushInterval is the offsets stage's persistence period: a
	// commit is on disk at most this long (plus the write) after it is
	// applied. offsetGrace adds the time to apply and write it (an atomic
	// file write with fsync, slow on a busy disk).
	offsetFlushInterval = 5 * time.Second
	offsetGrace         = 1500 * time.Millisecond
)

// msgSpec is everything needed to send a message again, as a client retry
// would: same body, same UNIQ_KEY, same due time.
type msgSpec struct {
	body  string
	queue int32
	uniq  string
	due   int64 // TIMER_DELIVER_MS; 0 for a plain message
}

func (m msgSpec) request(topic string) *remoting.Command {
	props := map[string]string{message.PropUniqKey: m.uniq}
	if m.due > 0 {
		props[message.PropTimerDeliverMS] = strconv.FormatInt(m.due, 10)
	}
	return processtest.SendRequest(topic, m.queue, []byte(m.body), props)
}

// commit is an UPDATE_CONSUMER_OFFSET the broker answered.
type commit struct {
	offset int64
	at     time.Time
}

// ledger is what the test process knows about one flush mode's run.
type ledger struct {
	mu       sync.Mutex
	acked    map[string]msgSpec // by body
	inDoubt  map[string]msgSpec // sent, not acknowledged (connection lost, refused): to resend
	resent   map[string]bool    // bodies sent more than once
	consumed map[string]int     // deliveries to the consumer, by body
	commits  [tortureQueues][]commit
	early    []string // timers seen before their due time (must stay empty)
}

func newLedger() *ledger {
	return &ledger{acked: map[string]msgSpec{}, inDoubt: map[string]msgSpec{}, resent: map[string]bool{},
		consumed: map[string]int{}}
}

func (l *ledger) ack(m msgSpec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[m.body] = m
	delete(l.inDoubt, m.body)
}

func (l *ledger) doubt(m msgSpec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.acked[m.body]; !ok {
		l.inDoubt[m.body] = m
	}
}

// takeInDoubt returns the messages to resend and marks them resent.
func (l *ledger) takeInDoubt() []msgSpec {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]msgSpec, 0, len(l.inDoubt))
	for b, m := range l.inDoubt {
		out = append(out, m)
		l.resent[b] = true
	}
	return out
}

// consume records a delivery to the consumer and checks a timer's time.
func (l *ledger) consume(r message.Record, now time.Time) {
	body := string(r.Body)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.consumed[body]++
	m, ok := l.acked[body]
	if !ok {
		m, ok = l.inDoubt[body]
	}
	if ok && m.due > 0 && (r.StoreTimestamp < m.due || now.UnixMilli() < m.due) {
		l.early = append(l.early, fmt.Sprintf("%s due %d stored %d received %d", body, m.due, r.StoreTimestamp, now.UnixMilli()))
	}
}

func (l *ledger) committed(q int32, off int64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.commits[q] = append(l.commits[q], commit{offset: off, at: at})
}

// load drives one broker process until ctx ends or its connections break.
type load struct {
	addr   string
	topic  string
	prefix string // makes bodies unique across loops
	led    *ledger
	uniq   *message.UniqKeyGenerator
	rng    *rand.Rand
	rngMu  sync.Mutex
}

func newLoad(addr, topic, prefix string, led *ledger, seed uint64) *load {
	return &load{addr: addr, topic: topic, prefix: prefix, led: led, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b9)),
		uniq: message.NewUniqKeyGenerator(netip.MustParseAddr("127.0.0.1"), os.Getpid(), int32(seed))}
}

func (ld *load) intN(n int) int {
	ld.rngMu.Lock()
	defer ld.rngMu.Unlock()
	return ld.rng.IntN(n)
}

func (ld *load) dial(ctx context.Context) (*remoting.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return remoting.Dial(dctx, ld.addr, remoting.ClientOptions{})
}

// send sends m once and records the outcome; it reports false when the
// connection is gone.
func (ld *load) send(ctx context.Context, c *remoting.Client, m msgSpec) bool {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ictx, m.request(ld.topic))
	if err == nil && resp.Code == remoting.Success {
		ld.led.ack(m)
		return true
	}
	ld.led.doubt(m)
	return err == nil
}

// resend sends again what was in doubt after the last crash, as a client
// retrying would (duplicates come from here when the first try was stored).
func (ld *load) resend(ctx context.Context) error {
	c, err := ld.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, m := range ld.led.takeInDoubt() {
		if !ld.send(ctx, c, m) {
			return fmt.Errorf("resend %s: connection lost", m.body)
		}
	}
	return nil
}

// produce sends plain messages (timers when timers is set) until the
// connection breaks or ctx ends.
func (ld *load) produce(ctx context.Context, id int, timers bool) {
	c, err := ld.dial(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	for seq := 0; ctx.Err() == nil; seq++ {
		m := msgSpec{queue: int32(ld.intN(tortureQueues)), uniq: ld.uniq.Next()}
		pause := time.Millisecond
		if timers {
			// Due from 0.2 s to 5 s from now: some during this run, some
			// after the kill.
			m.due = time.Now().Add(200*time.Millisecond + time.Duration(ld.intN(4800))*time.Millisecond).UnixMilli()
			m.body = fmt.Sprintf("timer-%s-%d-%d-due-%d", ld.prefix, id, seq, m.due)
			pause = 10 * time.Millisecond
		} else {
			m.body = fmt.Sprintf("plain-%s-%d-%d-%s", ld.prefix, id, seq, strings.Repeat("p", 64))
		}
		if !ld.send(ctx, c, m) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// consume pulls every queue from the group's committed offsets and commits
// what it consumed every 200 ms, until the connection breaks or ctx ends.
func (ld *load) consume(ctx context.Context) {
	c, err := ld.dial(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	var next [tortureQueues]int64
	for q := range next {
		off, err := queryOffset(ctx, c, ld.topic, int32(q))
		if err != nil {
			return
		}
		next[q] = max(off, 0)
	}
	lastCommit := time.Now()
	for ctx.Err() == nil {
		got := 0
		for q := int32(0); q < tortureQueues; q++ {
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err := c.Invoke(ictx, processtest.PullRequest(tortureGroup, ld.topic, q, next[q], 32))
			cancel()
			if err != nil {
				return
			}
			now := time.Now()
			if resp.Code == remoting.Success {
				recs, err := processtest.DecodeMessages(resp.Body)
				if err != nil {
					ld.led.mu.Lock()
					ld.led.early = append(ld.led.early, "undecodable pull: "+err.Error())
					ld.led.mu.Unlock()
					return
				}
				for _, r := range recs {
					ld.led.consume(r, now)
				}
				got += len(recs)
			}
			if nb, err := strconv.ParseInt(resp.Field("nextBeginOffset"), 10, 64); err == nil && nb >= 0 {
				next[q] = nb
			}
		}
		if time.Since(lastCommit) >= 200*time.Millisecond {
			for q := int32(0); q < tortureQueues; q++ {
				if !commitOffset(ctx, c, ld.topic, q, next[q], ld.led) {
					return
				}
			}
			lastCommit = time.Now()
		}
		if got == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// queryOffset asks for the group's committed offset of a queue (-1 when
// it has none).
func queryOffset(ctx context.Context, c *remoting.Client, topic string, q int32) (int64, error) {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ictx, remoting.NewRequest(remoting.QueryConsumerOffset, map[string]string{
		"consumerGroup": tortureGroup, "topic": topic, "queueId": strconv.Itoa(int(q)),
	}, nil))
	if err != nil {
		return 0, err
	}
	switch resp.Code {
	case remoting.Success:
		return strconv.ParseInt(resp.Field("offset"), 10, 64)
	case remoting.QueryNotFound:
		return -1, nil
	}
	return 0, fmt.Errorf("query offset %s/%d: code %d %s", topic, q, resp.Code, resp.Remark)
}

// commitOffset commits off and records it when the broker answered.
func commitOffset(ctx context.Context, c *remoting.Client, topic string, q int32, off int64, led *ledger) bool {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ictx, remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": tortureGroup, "topic": topic, "queueId": strconv.Itoa(int(q)),
		"commitOffset": strconv.FormatInt(off, 10),
	}, nil))
	if err != nil {
		return false
	}
	if resp.Code == remoting.Success {
		led.committed(q, off, time.Now())
	}
	return true
}
