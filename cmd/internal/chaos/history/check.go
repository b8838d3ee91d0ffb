package history

import (
	"fmt"
	"slices"
	"sort"
)

// Options tune the checker.
type Options struct {
	// CancelMargin: a cancel counts as confirmed when its ok came at least
	// this many milliseconds before the timer's due time (a cancel racing
	// the delivery may lose; default 1000).
	CancelMargin int64
	// LateBoundMs, when > 0, makes a timer delivered later than this past
	// its due time a violation (the bound of failover time + 1 s).
	LateBoundMs int64
	// TimerDuplicatesFatal makes a timer delivered twice a violation
	// (plain duplicates are only reported: at-least-once).
	TimerDuplicatesFatal bool
}

// Lateness summarises how late timers arrived (first delivery - due), in
// milliseconds.
type Lateness struct {
	N             int
	P50, P99, Max int64
}

// Report is what the checker found.
type Report struct {
	Invoked, OK, Failed, Indeterminate int
	// Deliveries counts recv ops; Received the distinct keys among them.
	Deliveries, Received int
	// Lost: sends answered ok and never received (timers with a cancel
	// attempt excepted).
	Lost []string
	// Unexpected: received keys that were never sent.
	Unexpected []string
	// Duplicates: deliveries beyond the first per key; TimerDuplicates the
	// part of them that are timers.
	Duplicates, TimerDuplicates int
	// FailedDelivered: sends recorded as definite failures and received
	// all the same (the client cannot always tell; reported only).
	FailedDelivered []string
	// Early: timers received before their due time.
	Early []string
	// Late: timers first received more than LateBoundMs past due.
	Late     []string
	Lateness Lateness
	// CancelledDelivered: timers whose cancel was confirmed in time and
	// which were delivered anyway.
	CancelledDelivered []string
	// OffsetConflicts: one queue offset delivered with two keys.
	OffsetConflicts []string
	// Gaps: per queue, offsets between the first and last delivered that
	// were never delivered.
	Gaps []string
}

// Violations lists every broken rule (empty: the history passes).
func (r Report) Violations(o Options) []string {
	var v []string
	add := func(name string, keys []string) {
		if len(keys) > 0 {
			v = append(v, fmt.Sprintf("%s: %d, e.g. %v", name, len(keys), keys[:min(5, len(keys))]))
		}
	}
	add("lost (ok, never received)", r.Lost)
	add("unexpected (received, never sent)", r.Unexpected)
	add("timers early", r.Early)
	add("timers late past the bound", r.Late)
	add("cancelled timers delivered", r.CancelledDelivered)
	add("queue offset delivered with two keys", r.OffsetConflicts)
	add("queue offset gaps", r.Gaps)
	if o.TimerDuplicatesFatal && r.TimerDuplicates > 0 {
		v = append(v, fmt.Sprintf("timer duplicates: %d", r.TimerDuplicates))
	}
	return v
}

// String is a one-paragraph summary for the test log.
func (r Report) String() string {
	return fmt.Sprintf("invoked %d ok %d fail %d info %d; deliveries %d of %d keys; lost %d unexpected %d "+
		"duplicates %d (timers %d) failed-but-delivered %d; timers early %d late %d lateness p50 %d ms p99 %d ms max %d ms (n %d); "+
		"cancelled delivered %d; offset conflicts %d gaps %d",
		r.Invoked, r.OK, r.Failed, r.Indeterminate, r.Deliveries, r.Received, len(r.Lost), len(r.Unexpected),
		r.Duplicates, r.TimerDuplicates, len(r.FailedDelivered), len(r.Early), len(r.Late),
		r.Lateness.P50, r.Lateness.P99, r.Lateness.Max, r.Lateness.N,
		len(r.CancelledDelivered), len(r.OffsetConflicts), len(r.Gaps))
}

// send is what the checker knows of one key's send.
type send struct {
	invoke      Op
	result      string // ok, fail, info, "" (no answer recorded: indeterminate)
	cancel      int64  // time of a confirmed cancel's ok (0: none)
	cancelTried bool   // a cancel was invoked: its timer may rightly never come
}

type queueKey struct {
	broker string
	topic  string
	queue  int
}

// Check runs every rule over ops.
func Check(ops []Op, o Options) Report {
	if o.CancelMargin == 0 {
		o.CancelMargin = 1000
	}
	var r Report
	sends := map[string]*send{}
	recvs := map[string][]Op{}
	for _, op := range ops {
		switch op.F {
		case FSend:
			s := sends[op.Key]
			if s == nil {
				s = &send{}
				sends[op.Key] = s
			}
			switch op.Type {
			case Invoke:
				r.Invoked++
				s.invoke = op
			case OK, Fail, Info:
				s.result = op.Type
			}
		case FCancel:
			if s := sends[op.Key]; s != nil && op.Type == Invoke {
				s.cancelTried = true
			}
			if op.Type == OK {
				if s := sends[op.Key]; s != nil {
					s.cancel = op.TimeMs
				}
			}
		case FRecv:
			r.Deliveries++
			recvs[op.Key] = append(recvs[op.Key], op)
		}
	}
	for _, s := range sends {
		switch s.result {
		case OK:
			r.OK++
		case Fail:
			r.Failed++
		default:
			r.Indeterminate++
		}
	}
	r.Received = len(recvs)
	var late []int64
	for k, s := range sends {
		got := recvs[k]
		if s.result == OK && len(got) == 0 && !s.cancelTried {
			r.Lost = append(r.Lost, k)
		}
		if len(got) == 0 {
			continue
		}
		if s.result == Fail {
			r.FailedDelivered = append(r.FailedDelivered, k)
		}
		if len(got) > 1 {
			r.Duplicates += len(got) - 1
			if s.invoke.Timer {
				r.TimerDuplicates += len(got) - 1
			}
		}
		if !s.invoke.Timer {
			continue
		}
		first := got[0].TimeMs
		for _, g := range got {
			first = min(first, g.TimeMs)
			if g.TimeMs < s.invoke.DueMs {
				r.Early = append(r.Early, fmt.Sprintf("%s %d ms early", k, s.invoke.DueMs-g.TimeMs))
				break
			}
		}
		if s.cancel != 0 && s.cancel <= s.invoke.DueMs-o.CancelMargin {
			r.CancelledDelivered = append(r.CancelledDelivered, k)
			continue
		}
		l := max(first-s.invoke.DueMs, 0)
		late = append(late, l)
		if o.LateBoundMs > 0 && l > o.LateBoundMs {
			r.Late = append(r.Late, fmt.Sprintf("%s %d ms late", k, l))
		}
	}
	for k := range recvs {
		if _, ok := sends[k]; !ok {
			r.Unexpected = append(r.Unexpected, k)
		}
	}
	r.Lateness = percentiles(late)
	r.OffsetConflicts, r.Gaps = checkQueues(recvs)
	for _, l := range [][]string{r.Lost, r.Unexpected, r.FailedDelivered, r.Early, r.Late,
		r.CancelledDelivered, r.OffsetConflicts, r.Gaps} {
		sort.Strings(l)
	}
	return r
}

// checkQueues finds queue offsets delivered with two different keys and
// offsets missing between a queue's first and last delivery.
func checkQueues(recvs map[string][]Op) (conflicts, gaps []string) {
	byQueue := map[queueKey]map[int64]string{}
	for k, got := range recvs {
		for _, g := range got {
			q := queueKey{g.Broker, g.Topic, g.Queue}
			m := byQueue[q]
			if m == nil {
				m = map[int64]string{}
				byQueue[q] = m
			}
			if prev, ok := m[g.QueueOffset]; ok && prev != k {
				a, b := min(prev, k), max(prev, k)
				conflicts = append(conflicts, fmt.Sprintf("%s/%s/%d offset %d: %s and %s", q.broker, q.topic, q.queue, g.QueueOffset, a, b))
				continue
			}
			m[g.QueueOffset] = k
		}
	}
	for q, m := range byQueue {
		offs := make([]int64, 0, len(m))
		for off := range m {
			offs = append(offs, off)
		}
		slices.Sort(offs)
		for i := 1; i < len(offs); i++ {
			if offs[i] != offs[i-1]+1 {
				gaps = append(gaps, fmt.Sprintf("%s/%s/%d offsets %d..%d missing", q.broker, q.topic, q.queue, offs[i-1]+1, offs[i]-1))
			}
		}
	}
	return slices.Compact(conflicts), gaps
}

func percentiles(v []int64) Lateness {
	if len(v) == 0 {
		return Lateness{}
	}
	slices.Sort(v)
	at := func(p float64) int64 { return v[min(len(v)-1, int(p*float64(len(v))))] }
	return Lateness{N: len(v), P50: at(0.50), P99: at(0.99), Max: v[len(v)-1]}
}
