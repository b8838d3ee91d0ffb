package process_test

// The power-loss test's POP consumer and its checks: a consumer that pops
// (POP_MESSAGE), acks about half of what it gets at once (ACK_MESSAGE) and
// leaves the rest in flight to come back after its invisible time, in
// every broker life, across the crashes. Its history is every delivery
// (body, the broker's popTime, the invisible time asked) and every ack's
// answer; the checks, after each restart and at the end:
//
//   - nothing acknowledged comes back: a delivery acked (ACK_MESSAGE
//     answered OK within its invisible time) is not delivered again, by
//     the same broker life, or under sync flush by any later one (the
//     journal's ack entry is durable before the answer);
//   - nothing comes back early: a delivery of a message that was delivered
//     before comes at or after the earlier delivery's popTime plus its
//     invisible time (same life, or sync flush);
//   - nothing is delivered that the log does not hold: every body popped is
//     a send's, and one sent in an earlier life is held by the topic as the
//     broker recovered it.
//
// Under async flush a crash may take the journal's pop and ack entries
// (answered before the next fsync): a delivery before such a crash may then
// come back early or after its ack in the next life, which the checks allow
// (at-least-once; docs/operations.md, "What survives what") unless the pop
// or ack was answered before the last fsync of the CommitLog's newest two
// segments (the journal's entries are CommitLog records) had started.
// Pops and acks answered after the crash instant happened on the old file
// system, which the new broker never sees: they are indeterminate.

import (
	"context"
	"fmt"
	"math/rand"
	"path"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
)

// popDelivery is one message a POP_MESSAGE answered.
type popDelivery struct {
	body      string
	life      int // the broker life (loop) that answered
	queue     int32
	offset    int64
	ck        string
	popTime   int64 // the broker's popTime (ms)
	invisible int64 // ms
	answered  time.Time
	ackAt     time.Time // ACK_MESSAGE answered OK (zero: not acked, or failed)
}

// popHistory is the POP consumer's history of one run.
type popHistory struct {
	mode     writer.FlushMode
	mu       sync.Mutex
	ds       []*popDelivery
	crashAt  map[int]time.Time       // life -> its crash
	syncedAt map[int]time.Time       // life -> journal records answered before it survived its crash (async flush)
	held     map[int]map[string]bool // life -> the pop topic's bodies at its start
	failures int                     // pops and acks without an OK answer
	stats    popStats
}

// popStats are the figures of the POP checks.
type popStats struct {
	pops, acked, redelivered, crossCrash, checks int
}

func (s popStats) String() string {
	return fmt.Sprintf("POP: %d deliveries, %d acked in time and never delivered again, %d redeliveries "+
		"(%d across a crash), none early; checked %d times", s.pops, s.acked, s.redelivered, s.crossCrash, s.checks)
}

// crashed records that life crashed at crashAt, leaving after: what the
// CommitLog's journal records answered before syncedAt survived.
func (h *popHistory) crashed(life int, crashAt time.Time, after *crashfs.FS) error {
	syncedAt, err := commitLogSyncedAt(after)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.crashAt == nil {
		h.crashAt, h.syncedAt = map[int]time.Time{}, map[int]time.Time{}
	}
	h.crashAt[life], h.syncedAt[life] = crashAt, syncedAt
	return nil
}

// commitLogSyncedAt returns when the latest fsync of the newest two CommitLog
// segments of fs started, the earlier of the two: a journal record answered
// before then is durable (the older segment holds it if the newer does not).
// The zero time when a segment was never synced.
func commitLogSyncedAt(fs *crashfs.FS) (time.Time, error) {
	dir := path.Join(plDataDir, "commitlog")
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return time.Time{}, fmt.Errorf("list the crashed CommitLog: %w", err)
	}
	var at time.Time
	for i := max(0, len(ents)-2); i < len(ents); i++ {
		t, ok := fs.LastSync(path.Join(dir, ents[i].Name()))
		if !ok {
			return time.Time{}, nil
		}
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at, nil
}

// known reports whether what life's broker answered at had to survive its
// crash: before the crash instant, and under async flush before the last
// fsync. Within a life everything is known. h.mu must be held.
func (h *popHistory) known(life int, at time.Time) bool {
	c, ok := h.crashAt[life]
	if !ok {
		return true // the life has not crashed
	}
	if h.mode == writer.FlushSync {
		return at.Before(c)
	}
	return at.Before(c) && at.Before(h.syncedAt[life])
}

// popLoop pops from the pop topic's queues by turns until ctx ends, acking
// about half of each answer at once.
func (r *plRun) popLoop(ctx context.Context, n *process.Node, life int, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	var c *remoting.Client
	defer func() {
		if c != nil {
			_ = c.Close()
		}
	}()
	for q := int32(0); ctx.Err() == nil; q = (q + 1) % plQueues {
		if c == nil {
			dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			var err error
			c, err = remoting.Dial(dctx, n.BrokerAddr(), remoting.ClientOptions{})
			cancel()
			if err != nil {
				c = nil
				select { // the broker is going: do not spin
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
				continue
			}
		}
		inv := 1000 + rng.Int63n(2000)
		req := popReq(plPopGroup, plPopTopic, q, inv, 200, "*")
		req.SetField("attemptId", fmt.Sprintf("pl-%d-%d", life, rng.Int63()))
		// An answer under way when the load stops is history: no ctx.
		resp, err := c.InvokeWithin(context.Background(), req, 3*time.Second)
		if err != nil {
			r.pops.failed()
			_ = c.Close()
			c = nil
			continue
		}
		ds, err := r.pops.delivered(resp, life, inv)
		if err != nil {
			r.t.Errorf("POP answer: %v", err)
			return
		}
		for _, d := range ds {
			if rng.Intn(2) == 0 {
				continue // left in flight: it comes back after inv
			}
			ack := ackReq(plPopGroup, plPopTopic, popped{body: d.body, queue: d.queue, offset: d.offset, ck: d.ck})
			resp, err := c.InvokeWithin(context.Background(), ack, 3*time.Second)
			r.pops.ackAnswered(d, resp, err)
		}
	}
}

// failed counts a POP or ACK without an answer.
func (h *popHistory) failed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failures++
}

// delivered records the messages of a POP_MESSAGE answer.
func (h *popHistory) delivered(resp *remoting.Command, life int, inv int64) ([]*popDelivery, error) {
	at := time.Now()
	if resp.Code != remoting.Success {
		return nil, nil // nothing to pop (PullNotFound / PollingNotFound) or busy
	}
	popTime, err := strconv.ParseInt(resp.Field("popTime"), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("popTime %q: %w", resp.Field("popTime"), err)
	}
	var out []*popDelivery
	for b := resp.Body; len(b) > 0; {
		rec, n, err := message.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("decode popped record: %w", err)
		}
		b = b[n:]
		ck, ok := message.LookupProperty(rec.Properties, pop.PropPopCK)
		if !ok {
			return nil, fmt.Errorf("popped %q without %s", rec.Body, pop.PropPopCK)
		}
		out = append(out, &popDelivery{body: string(rec.Body), life: life, queue: rec.QueueID, offset: rec.QueueOffset,
			ck: ck, popTime: popTime, invisible: inv, answered: at})
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ds = append(h.ds, out...)
	return out, nil
}

// ackAnswered records an ACK_MESSAGE's answer for d.
func (h *popHistory) ackAnswered(d *popDelivery, resp *remoting.Command, err error) {
	at := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil || resp.Code != remoting.Success {
		h.failures++
		return
	}
	d.ackAt = at
}

// checkPop checks the POP history against the broker n, which starts life:
// first it records what the pop topic holds as recovered.
func (r *plRun) checkPop(n *process.Node, life int) {
	held := r.read(n, plPopTopic)
	ops := r.hist.snapshot()
	var v verdict
	checkPresent(&v, ops, opPop, held)
	checkKnown(&v, ops, opPop, held)
	h := &r.pops
	h.mu.Lock()
	if h.held == nil {
		h.held = map[int]map[string]bool{}
	}
	if _, ok := h.held[life]; !ok {
		h.held[life] = map[string]bool{}
		for body := range held {
			h.held[life][body] = true
		}
	}
	h.check(&v, ops)
	stats := h.stats
	h.mu.Unlock()
	r.stats.pop = stats
	if len(v.problems) > 0 {
		r.t.Fatalf("POP, %s flush, broker life %d:\n%v", r.mode, life, &v)
	}
}

// check runs the POP checks over the whole history. h.mu must be held.
func (h *popHistory) check(v *verdict, ops []plOp) {
	sent := map[string]plOp{}
	for _, o := range ops {
		if o.kind == opPop {
			sent[o.id] = o
		}
	}
	byBody := map[string][]*popDelivery{}
	for _, d := range h.ds {
		byBody[d.body] = append(byBody[d.body], d)
	}
	s := popStats{pops: len(h.ds), checks: h.stats.checks + 1}
	for body, ds := range byBody {
		sort.SliceStable(ds, func(i, j int) bool { return ds[i].popTime < ds[j].popTime })
		o, ok := sent[body]
		if !ok {
			v.addf("POP delivered %q: no send of it", body)
			continue
		}
		for i, d := range ds {
			if o.loop < d.life && !h.held[d.life][body] {
				v.addf("POP delivered %s (sent in life %d) in life %d, whose recovered log does not hold it", body, o.loop, d.life)
			}
			if i == 0 {
				continue
			}
			s.redelivered++
			prev := ds[i-1]
			if prev.life != d.life {
				s.crossCrash++
			}
			// What the broker delivering d must know of prev: all of it in
			// the same life; across crashes what was durable (known).
			if due := prev.popTime + prev.invisible; d.popTime < due && (prev.life == d.life || h.known(prev.life, prev.answered)) {
				v.addf("POP %s delivered again %d ms early: popped at %d (life %d) invisible %d ms, again at %d (life %d)",
					body, due-d.popTime, prev.popTime, prev.life, prev.invisible, d.popTime, d.life)
			}
			for _, a := range ds[:i] {
				inTime := !a.ackAt.IsZero() && a.ackAt.UnixMilli() < a.popTime+a.invisible
				if inTime && d.popTime > a.ackAt.UnixMilli() && (a.life == d.life || h.known(a.life, a.ackAt)) {
					v.addf("POP %s acked at %d (life %d, popped at %d) and delivered again at %d (life %d)",
						body, a.ackAt.UnixMilli(), a.life, a.popTime, d.popTime, d.life)
				}
			}
		}
		for _, d := range ds {
			if !d.ackAt.IsZero() && d.ackAt.UnixMilli() < d.popTime+d.invisible {
				s.acked++
			}
		}
	}
	h.stats = s
}
