package process_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
)

// The power-loss test's history and checker, in the manner of Jepsen: every
// operation is recorded when it is invoked and when its answer comes (ok,
// failed, or indeterminate when the answer came after the crash or never),
// the crash decides which acknowledged operations had to survive it, and
// the checker compares the recovered broker's content with that.

// opKind is what an operation sent.
type opKind byte

const (
	opPlain opKind = 'p' // a plain message
	opTimer opKind = 't' // a timer message (TIMER_DELIVER_MS)
	opTx    opKind = 'x' // a transactional message, committed or rolled back
	opPop   opKind = 'o' // a plain message to the topic the POP consumer pops
)

// plOp is one send of the history. Every send has its own body (the id): a
// failed send is never retried with the same body, so the id identifies
// one attempt, and any id found more than once was stored twice.
type plOp struct {
	id      string
	kind    opKind
	loop    int
	dueMs   int64 // opTimer: TIMER_DELIVER_MS
	commit  bool  // opTx: the local transaction's outcome
	invoked time.Time
	ackAt   time.Time // the SEND_OK came (zero: failed or no answer)
	offset  int64     // the stored record's CommitLog offset (from the offset message id)
	err     error
	// mustSurvive is set at the crash: acknowledged before it, and (async
	// flush) in a CommitLog segment whose last fsync before the crash
	// started after the acknowledgement.
	mustSurvive bool
}

// plHistory is the history of one run.
type plHistory struct {
	mu  sync.Mutex
	ops []*plOp
	seq int
}

// invoke records an operation about to be sent and returns it.
func (h *plHistory) invoke(kind opKind, loop int) *plOp {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	o := &plOp{id: fmt.Sprintf("%c-%d-%d", kind, loop, h.seq), kind: kind, loop: loop, invoked: time.Now(), offset: -1}
	h.ops = append(h.ops, o)
	return o
}

// answered records the answer of o.
func (h *plHistory) answered(o *plOp, offsetMsgID string, err error) {
	at := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		o.err = err
		return
	}
	o.ackAt = at
	if _, off, perr := message.ParseOffsetMsgID(offsetMsgID); perr == nil {
		o.offset = off
	} else {
		o.err = fmt.Errorf("offset message id %q: %w", offsetMsgID, perr)
	}
}

// crashed decides, for the operations of loop, which had to survive a
// crash at crashAt that left after (its LastSync is what was synced when
// the power went).
func (h *plHistory) crashed(loop int, crashAt time.Time, mode writer.FlushMode, after *crashfs.FS,
	dataDir string, segSize int64) (acked, must int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range h.ops {
		if o.loop != loop || o.ackAt.IsZero() || !o.ackAt.Before(crashAt) || o.offset < 0 {
			continue
		}
		acked++
		if mode == writer.FlushSync {
			o.mustSurvive = true
		} else {
			seg := filepath.Join(dataDir, "commitlog", fmt.Sprintf("%020d", o.offset/segSize*segSize))
			at, ok := after.LastSync(seg)
			o.mustSurvive = ok && at.After(o.ackAt)
		}
		if o.mustSurvive {
			must++
		}
	}
	return acked, must
}

// snapshot returns the operations, for checking.
func (h *plHistory) snapshot() []plOp {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]plOp, len(h.ops))
	for i, o := range h.ops {
		out[i] = *o
	}
	return out
}

// stored is one message as the recovered broker holds it.
type stored struct {
	storeMs int64
	outMs   string // TIMER_OUT_MS (write-backs of timers)
}

// verdict collects what the checker found wrong.
type verdict struct {
	problems []string
}

func (v *verdict) addf(format string, args ...any) {
	if len(v.problems) < 40 {
		v.problems = append(v.problems, fmt.Sprintf(format, args...))
	} else if len(v.problems) == 40 {
		v.problems = append(v.problems, "... (more)")
	}
}

func (v *verdict) String() string { return strings.Join(v.problems, "\n") }

// checkPresent checks the ops of kind against what a topic holds (by body):
// every one that had to survive is there, none is there twice.
func checkPresent(v *verdict, ops []plOp, kind opKind, held map[string][]stored) (found, lost int) {
	for _, o := range ops {
		if o.kind != kind {
			continue
		}
		n := len(held[o.id])
		if n > 1 {
			v.addf("%s stored %d times (sent once)", o.id, n)
		}
		if n > 0 {
			found++
		}
		if o.mustSurvive && n == 0 {
			lost++
			v.addf("%s acknowledged at %s (loop %d, commitlog offset %d) and lost", o.id,
				o.ackAt.Format("15:04:05.000"), o.loop, o.offset)
		}
	}
	return found, lost
}

// checkKnown checks that every body a topic holds is the id of a send of
// kind (or one of extra): a message no send made was delivered from
// something the CommitLog does not hold (a derived entry ahead of it).
func checkKnown(v *verdict, ops []plOp, kind opKind, held map[string][]stored, extra ...string) {
	known := map[string]bool{}
	for _, o := range ops {
		if o.kind == kind {
			known[o.id] = true
		}
	}
	for _, x := range extra {
		known[x] = true
	}
	for body := range held {
		if !known[body] {
			v.addf("%q held in the %c topic: no send of it (a position the CommitLog does not hold?)", body, kind)
		}
	}
}

// checkTimers checks the timer write-backs in the real topic: none before
// its due time, each timer at most once, and every timer that had to
// survive and was due by dueBy delivered.
func checkTimers(v *verdict, ops []plOp, held map[string][]stored, dueBy int64) (delivered int) {
	for _, o := range ops {
		if o.kind != opTimer {
			continue
		}
		got := held[o.id]
		if len(got) > 1 {
			v.addf("timer %s (due %d, acked %s) delivered %d times: %+v", o.id, o.dueMs, o.ackAt.Format("15:04:05.000"), len(got), got)
		}
		for _, s := range got {
			if s.storeMs < o.dueMs {
				v.addf("timer %s delivered %d ms early (due %d, written back %d)", o.id, o.dueMs-s.storeMs, o.dueMs, s.storeMs)
			}
			if s.outMs != fmt.Sprint(o.dueMs) {
				v.addf("timer %s written back with TIMER_OUT_MS %q, sent with %d", o.id, s.outMs, o.dueMs)
			}
		}
		if len(got) > 0 {
			delivered++
		}
		if o.mustSurvive && len(got) == 0 && o.dueMs <= dueBy {
			v.addf("timer %s acknowledged at %s (loop %d), due %d, never delivered", o.id,
				o.ackAt.Format("15:04:05.000"), o.loop, o.dueMs)
		}
	}
	return delivered
}

// checkTransactions checks the transactional messages in the real topic:
// a rolled-back one is never delivered, a committed one whose half message
// had to survive is delivered, none twice.
func checkTransactions(v *verdict, ops []plOp, held map[string][]stored) (committed, delivered int) {
	for _, o := range ops {
		if o.kind != opTx {
			continue
		}
		n := len(held[o.id])
		if n > 1 {
			v.addf("transaction %s delivered %d times", o.id, n)
		}
		if n > 0 {
			delivered++
		}
		switch {
		case !o.commit && n > 0:
			v.addf("transaction %s rolled back and delivered", o.id)
		case o.commit && o.mustSurvive:
			committed++
			if n == 0 {
				v.addf("transaction %s committed (half acknowledged at %s, loop %d) and never delivered", o.id,
					o.ackAt.Format("15:04:05.000"), o.loop)
			}
		}
	}
	return committed, delivered
}

// plStats are the figures a run reports.
type plStats struct {
	loops, strict, random, reorder                int
	corrections, corrected                        map[crashKind]int // corrections at start, starts with some, by crash kind
	pop                                           popStats
	acked, must, plainFound, timersDelivered      int
	txCommitted, txDelivered, offsetChecks, sends int
}

func (s plStats) String() string {
	return fmt.Sprintf("%d crashes (%d strict, %d keeping a random part of the unsynced writes, %d reordering: "+
		"%d of them left derived positions ahead of the CommitLog, %d corrections at start; after strict and random crashes %d+%d), %d sends, "+
		"%d acknowledged before a crash, %d of them had to survive and did; %d plain messages read back, "+
		"%d timers delivered, none early, none twice; %d transactions delivered, none rolled back, "+
		"every one of the %d committed ones that had to survive; %d consumer offsets checked against their queues",
		s.loops, s.strict, s.random, s.reorder, s.corrected[crashReorder], s.corrections[crashReorder],
		s.corrections[crashStrict], s.corrections[crashRandom], s.sends, s.acked, s.must, s.plainFound, s.timersDelivered, s.txDelivered,
		s.txCommitted, s.offsetChecks) + "; " + s.pop.String()
}
