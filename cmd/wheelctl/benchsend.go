package main

// The send and receive halves of `wheelctl bench-timer`: pipelined timer
// sends over a few lean connections, and one long-polling puller per queue
// feeding a recorder that measures lateness and counts early, duplicate
// and missing deliveries.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// sendOpts shape the send phase.
type sendOpts struct {
	conns, window, queues, size int
	serialize                   remoting.SerializeType
	progress                    io.Writer // nil: none; a terminal: a bar; else a line every 10 s
	sec                         *security // credentials and TLS (nil: plaintext, unsigned)
}

// sendStats is the outcome of a send phase.
type sendStats struct {
	acked, failed, busy int64
	sentLate            int64 // acknowledged after their due time (became ordinary messages)
	elapsed             time.Duration
	lastAck             time.Time
	firstErr            string
}

// rate is acknowledged sends per second.
func (s sendStats) rate() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.acked) / s.elapsed.Seconds()
}

// benchUniq returns a UNIQ_KEY generator for this process.
func benchUniq() *message.UniqKeyGenerator {
	return message.NewUniqKeyGenerator(netip.MustParseAddr("127.0.0.1"), os.Getpid(), int32(time.Now().UnixNano()))
}

// benchBody returns a body of size bytes (at least 8) starting with seq.
func benchBody(buf []byte, seq uint64) []byte {
	binary.BigEndian.PutUint64(buf, seq)
	return buf
}

// sendTimers sends n timer messages, message seq due at dueOf(seq) to queue
// seq % queues, and waits for every answer. SYSTEM_BUSY answers are retried.
func sendTimers(ctx context.Context, addr, topic string, n int, dueOf func(int) int64, o sendOpts) (sendStats, error) {
	var st sendStats
	var acked, failed, busy, sentLate atomic.Int64
	var lastAck atomic.Int64
	var errOnce sync.Once
	conns := make([]*leanConn, o.conns)
	for i := range conns {
		c, err := dialLean(ctx, addr, o.window, o.sec.clientOptions())
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			return st, err
		}
		conns[i] = c
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	stopProgress := make(chan struct{})
	switch {
	case o.progress != nil && isTerminal(o.progress):
		bar := startProgress(o.progress, "sending timers", int64(n), 0, acked.Load)
		defer bar.finish()
	case o.progress != nil:
		go progressLines(o.progress, n, &acked, stopProgress)
	}
	defer close(stopProgress)
	uniq := benchUniq()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	for k, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			retry := make(chan int, o.window)
			var outstanding atomic.Int64
			s := newTimerSender("wheelctl_bench_timer", topic, "broker-a", o.serialize, uniq)
			buf := make([]byte, max(o.size, 8))
			send := func(seq int) error {
				due := dueOf(seq)
				req := s.build(seq%o.queues, due, benchBody(buf, uint64(seq)))
				return c.Go(req, func(resp *remoting.Command, err error) {
					switch {
					case err == nil && resp.Code == remoting.Success:
						now := time.Now().UnixMilli()
						if now >= due {
							sentLate.Add(1)
						}
						acked.Add(1)
						lastAck.Store(now)
					case err == nil && resp.Code == remoting.SystemBusy:
						busy.Add(1)
						retry <- seq // never blocks: at most window requests are in flight
						return
					default:
						failed.Add(1)
						errOnce.Do(func() {
							if err != nil {
								st.firstErr = err.Error()
							} else {
								st.firstErr = fmt.Sprintf("code %d: %s", resp.Code, resp.Remark)
							}
						})
					}
					outstanding.Add(-1)
				})
			}
			next := k
			for ctx.Err() == nil {
				select {
				case seq := <-retry:
					time.Sleep(time.Millisecond)
					if err := send(seq); err != nil {
						errs[k] = err
						return
					}
					continue
				default:
				}
				if next < n {
					outstanding.Add(1)
					if err := send(next); err != nil {
						errs[k] = err
						return
					}
					next += len(conns)
					continue
				}
				if outstanding.Load() == 0 {
					return
				}
				select {
				case seq := <-retry:
					if err := send(seq); err != nil {
						errs[k] = err
						return
					}
				case <-time.After(2 * time.Millisecond):
				}
			}
		}()
	}
	wg.Wait()
	st.acked, st.failed, st.busy, st.sentLate = acked.Load(), failed.Load(), busy.Load(), sentLate.Load()
	st.lastAck = time.UnixMilli(lastAck.Load())
	st.elapsed = st.lastAck.Sub(start)
	for _, err := range errs {
		if err != nil {
			return st, err
		}
	}
	return st, ctx.Err()
}

// progressLines prints the send progress every 10 s.
func progressLines(w io.Writer, n int, acked *atomic.Int64, stop <-chan struct{}) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	start, prev, prevAt := time.Now(), int64(0), time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			a := acked.Load()
			fmt.Fprintf(w, "  sent %d/%d in %.0f s (last 10 s: %.0f/s)\n", a, n, now.Sub(start).Seconds(),
				float64(a-prev)/now.Sub(prevAt).Seconds())
			prev, prevAt = a, now
		}
	}
}

// delivery is what the recorder needs from one pulled record.
type delivery struct {
	seq     uint64
	dueMs   int64 // TIMER_DELIVER_MS property (-1: missing)
	storeMs int64 // STORETIMESTAMP of the written-back record
}

// parseDelivery decodes the record at the start of b and returns it with
// its size.
func parseDelivery(b []byte) (delivery, int, error) {
	r, n, err := message.Decode(b)
	if err != nil {
		return delivery{}, 0, fmt.Errorf("pulled record: %w", err)
	}
	if len(r.Body) < 8 {
		return delivery{}, 0, fmt.Errorf("pulled record: body of %d bytes has no sequence number", len(r.Body))
	}
	d := delivery{seq: binary.BigEndian.Uint64(r.Body), dueMs: -1, storeMs: r.StoreTimestamp}
	if v, ok := message.LookupProperty(r.Properties, message.PropTimerDeliverMS); ok {
		if due, err := strconv.ParseInt(v, 10, 64); err == nil {
			d.dueMs = due
		}
	}
	return d, n, nil
}

// recorder collects deliveries of messages 0..len(dueMs)-1.
type recorder struct {
	mu          sync.Mutex
	dueMs       []int64  // by sequence number
	seen        []uint64 // bitset by sequence number
	lateUs      []int64  // lateness at the consumer, µs, one per first delivery
	storeLateUs []int64  // STORETIMESTAMP - due, µs (ms resolution), one per first delivery
	seqs        []uint64 // sequence number of each first delivery, in arrival order
	early       int      // arrived at the consumer before their due time
	storeEarly  int      // written back (STORETIMESTAMP) before their due time
	dups        int      // delivered again
	strays      int      // unknown sequence numbers
	mismatched  int      // TIMER_DELIVER_MS differs from what was sent
	badRecords  int      // undecodable pull bodies
	lastArrival time.Time
}

func newRecorder(dueMs []int64) *recorder {
	return &recorder{dueMs: dueMs, seen: make([]uint64, (len(dueMs)+63)/64),
		lateUs: make([]int64, 0, len(dueMs)), storeLateUs: make([]int64, 0, len(dueMs)), seqs: make([]uint64, 0, len(dueMs))}
}

// onBody records one pull response body.
func (r *recorder) onBody(arrival time.Time, body []byte) {
	arr := arrival.UnixMicro()
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(body) > 0 {
		d, n, err := parseDelivery(body)
		if err != nil {
			r.badRecords++
			return
		}
		body = body[n:]
		if d.seq >= uint64(len(r.dueMs)) {
			r.strays++
			continue
		}
		w, bit := d.seq/64, uint64(1)<<(d.seq%64)
		if r.seen[w]&bit != 0 {
			r.dups++
			continue
		}
		r.seen[w] |= bit
		due := r.dueMs[d.seq]
		if d.dueMs != due {
			r.mismatched++
		}
		late := arr - due*1000
		if late < 0 {
			r.early++
		}
		if d.storeMs < due {
			r.storeEarly++
		}
		r.lateUs = append(r.lateUs, late)
		r.storeLateUs = append(r.storeLateUs, (d.storeMs-due)*1000)
		r.seqs = append(r.seqs, d.seq)
		r.lastArrival = arrival
	}
}

// dump writes one CSV line per first delivery, in arrival order: sequence
// number, due time (ms), written back minus due (ms), arrival minus due (µs).
func (r *recorder) dump(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("dump deliveries: %w", err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "seq,due_ms,store_late_ms,late_us")
	for i, seq := range r.seqs {
		fmt.Fprintf(w, "%d,%d,%d,%d\n", seq, r.dueMs[seq], r.storeLateUs[i]/1000, r.lateUs[i])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("dump deliveries: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("dump deliveries: %w", err)
	}
	return nil
}

// delivered returns the number of distinct messages received.
func (r *recorder) delivered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lateUs)
}

// latency summarises latencies or lateness in ms.
type latency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// percentiles returns nearest-rank percentiles of lateness (µs in, ms out).
func percentiles(us []int64) latency {
	if len(us) == 0 {
		return latency{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	}
	s := slices.Clone(us)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return float64(s[max(i, 0)]) / 1000
	}
	return latency{at(0.50), at(0.90), at(0.99), float64(s[len(s)-1]) / 1000}
}

// consume starts one long-polling puller per queue; stop ends them and
// returns the number of failed pulls.
func consume(ctx context.Context, addr, topic string, queues, batch int, rec *recorder, opts remoting.ClientOptions) (stop func() int, err error) {
	ctx, cancel := context.WithCancel(ctx)
	clients := make([]*remoting.Client, queues)
	for q := range clients {
		c, err := remoting.Dial(ctx, addr, opts)
		if err != nil {
			cancel()
			for _, c := range clients[:q] {
				c.Close()
			}
			return nil, fmt.Errorf("consumer: %w", err)
		}
		clients[q] = c
	}
	var failures atomic.Int64
	var wg sync.WaitGroup
	group := fmt.Sprintf("wheelctl_bench_timer_cg_%d", time.Now().UnixNano())
	for q, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			failures.Add(int64(pullLoop(ctx, c, group, topic, q, batch, rec.onBody)))
		}()
	}
	return func() int {
		cancel()
		for _, c := range clients {
			c.Close()
		}
		wg.Wait()
		return int(failures.Load())
	}, nil
}

// sendTimersVia sends n timer messages, message seq due at dueOf(seq),
// through a producer client (producerKinds) instead of the lean sender:
// async sends with at most conns x window in flight, the client choosing
// the queues and retrying as it does for an application.
func sendTimersVia(ctx context.Context, kind, namesrv, topic string, n int, dueOf func(int) int64, o sendOpts) (sendStats, error) {
	var st sendStats
	if namesrv == "" {
		return st, usagef("--client %s needs a name server: give --namesrv", kind)
	}
	p, err := newProducer(kind, producerOptions{Namesrv: namesrv, Group: "wheelctl_bench_timer", Retries: 2, Security: o.sec})
	if err != nil {
		return st, err
	}
	defer func() { _ = p.Close() }()
	var acked, failed, sentLate, lastAck atomic.Int64
	var errOnce sync.Once
	stopProgress := make(chan struct{})
	if o.progress != nil {
		go progressLines(o.progress, n, &acked, stopProgress)
	}
	defer close(stopProgress)
	slots := make(chan struct{}, o.conns*o.window)
	fail := func(err error) {
		failed.Add(1)
		errOnce.Do(func() { st.firstErr = err.Error() })
	}
	start := time.Now()
	for seq := 0; seq < n && ctx.Err() == nil; seq++ {
		slots <- struct{}{}
		due := dueOf(seq)
		m := &outMessage{Topic: topic, Body: benchBody(make([]byte, max(o.size, 8)), uint64(seq)), DeliverAt: time.UnixMilli(due)}
		err := p.SendAsync(ctx, m, func(_ receipt, err error) {
			defer func() { <-slots }()
			if err != nil {
				fail(err)
				return
			}
			now := time.Now().UnixMilli()
			if now >= due {
				sentLate.Add(1)
			}
			acked.Add(1)
			lastAck.Store(now)
		})
		if err != nil {
			fail(err)
			<-slots
		}
	}
	for range cap(slots) { // wait for every answer
		slots <- struct{}{}
	}
	st.acked, st.failed, st.sentLate = acked.Load(), failed.Load(), sentLate.Load()
	st.elapsed = time.Since(start)
	st.lastAck = time.UnixMilli(lastAck.Load())
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if st.failed > 0 {
		return st, fmt.Errorf("%d of %d timer sends failed, first: %s", st.failed, n, st.firstErr)
	}
	return st, nil
}
