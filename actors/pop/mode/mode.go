// Package mode is the consumption model of each (consumer group, topic):
// PULL (remoting push and pull consumers: PULL_MESSAGE, LITE_PULL_MESSAGE)
// or POP (remoting POP consumers, RocketMQ 5's gRPC consumers). The POP
// engine (actors/pop) owns it and is its only writer; any goroutine reads
// it without a lock, so a codec on an event loop consults it on every pull.
//
// RocketMQ 5 keeps a mode per (topic, group), set by
// SET_MESSAGE_REQUEST_MODE (401, `mqadmin setConsumeMode`) and persisted
// (messageRequestMode.json); its pull and pop processors check nothing,
// and both move the group's one consumer offset. In wheelmq the POP engine
// holds per-offset state above that offset, so a pull consumer of the same
// group would re-read (and commit past) messages in flight to POP
// consumers, and the engine's commits would move the pull consumer's
// offset back. So the broker refuses the mix (docs/pop.md, "One model at a
// time"):
//
//   - a mode set by 401 decides: POP refuses pulls, PULL refuses pops;
//   - otherwise a pull is refused while the group has POP deliveries in
//     flight on the topic (popped, neither acked nor past their deadline:
//     the engine's journaled state), and a pop is refused while a pull of
//     the group on the topic was served within its suspend time plus
//     PullGrace (a live pull consumer asks again at least that often);
//   - while the engine rebuilds its state from its journal (at a start
//     that finds a journal, after a promotion), pulls are refused as busy:
//     nobody knows yet what is in flight;
//   - after a promotion, until the metadata log has applied every record
//     the old master logged (SetModesPending), pulls and pops of every
//     group are refused as busy: a 401 the old master answered moments
//     before it failed may not be in the table yet.
//
// The modes set by 401 are persisted by the engine
// (config/messageRequestMode.json) and replicated as metadata records
// (storage/metarec KindRequestModePut), so they hold after a restart and
// a failover; the in-flight part comes from the engine's journal, which the
// engine replays at a start and on a promotion.
package mode

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/storage/meta"
)

// PullGrace is how long after a pull's suspend time its group still counts
// as consumed by pull.
const PullGrace = 10 * time.Second

// Key names a (consumer group, topic).
type Key struct{ Group, Topic string }

// Refusal says why a pull or a pop is not served. Busy refusals are
// passing (retry); the others hold until the other model lets go.
type Refusal struct {
	Busy   bool
	Remark string
}

// Error implements error.
func (r *Refusal) Error() string { return r.Remark }

// hold is the POP deliveries in flight of one (group, topic): count is the
// engine's alone; until (ms) is the latest deadline among them while count
// is positive (an upper bound: a delivery acked leaves it as it was), 0
// when none is in flight.
type hold struct {
	count int64
	until atomic.Int64
}

// Table is the consumption model of every (group, topic). The zero value
// is not usable: New.
type Table struct {
	modes atomic.Pointer[map[Key]meta.RequestMode] // set by 401; immutable once published
	holds atomic.Pointer[map[Key]*hold]            // POP in flight; the map is immutable, its values atomic
	// w is the engine's copy of the holds map (same values), copied into
	// holds when a key is added.
	w          map[Key]*hold
	pulls      sync.Map // Key -> *atomic.Int64: served pulls hold the group for PULL until (ms)
	recovering atomic.Bool
	// modesPending: the modes may lag the old master's (SetModesPending).
	modesPending atomic.Bool
	// reloaded is the replication epoch the engine last dropped its state
	// for and began reading the journal again as master (-1: never); a
	// master whose epoch differs has not begun to (see ReloadedFor).
	reloaded atomic.Int64
}

// New returns an empty table.
func New() *Table {
	t := &Table{w: map[Key]*hold{}}
	t.reloaded.Store(-1)
	t.modes.Store(&map[Key]meta.RequestMode{})
	t.holds.Store(&map[Key]*hold{})
	return t
}

// Mode is the mode 401 set for (group, topic): meta.RequestModePull,
// meta.RequestModePop, or "" when none was set.
func (t *Table) Mode(group, topic string) string {
	return (*t.modes.Load())[Key{group, topic}].Mode
}

// Modes is every mode 401 set; the map is shared and must not be changed.
func (t *Table) Modes() map[Key]meta.RequestMode { return *t.modes.Load() }

// PullAllowed decides a pull of (group, topic) that may be suspended up to
// suspend; a pull allowed holds the group for PULL until now + suspend +
// PullGrace.
func (t *Table) PullAllowed(group, topic string, suspend time.Duration, now time.Time) *Refusal {
	if t.modesPending.Load() {
		return &Refusal{Busy: true, Remark: remarkModesPending}
	}
	k := Key{group, topic}
	switch (*t.modes.Load())[k].Mode {
	case meta.RequestModePop:
		return &Refusal{Remark: fmt.Sprintf("the consumer group[%s] consumes topic[%s] by POP (set by SET_MESSAGE_REQUEST_MODE): "+
			"pulls are refused; a group is consumed by one model at a time", group, topic)}
	case meta.RequestModePull:
	default:
		if t.recovering.Load() {
			return &Refusal{Busy: true, Remark: "POP state is being recovered from its journal; pulls wait for it (a group is " +
				"consumed by one model at a time), retry"}
		}
		if h := (*t.holds.Load())[k]; h != nil {
			if d := h.until.Load(); d > now.UnixMilli() {
				return &Refusal{Remark: fmt.Sprintf("the consumer group[%s] has POP deliveries of topic[%s] in flight until %s: "+
					"pulls are refused until they are acked or expire; a group is consumed by one model at a time",
					group, topic, time.UnixMilli(d).UTC().Format(time.RFC3339Nano))}
			}
		}
	}
	until := now.Add(suspend + PullGrace).UnixMilli()
	v, ok := t.pulls.Load(k)
	if !ok {
		v, _ = t.pulls.LoadOrStore(k, new(atomic.Int64))
	}
	p := v.(*atomic.Int64)
	for cur := p.Load(); cur < until && !p.CompareAndSwap(cur, until); cur = p.Load() {
	}
	return nil
}

// PopAllowed decides a pop of (group, topic).
func (t *Table) PopAllowed(group, topic string, now time.Time) *Refusal {
	if t.modesPending.Load() {
		return &Refusal{Busy: true, Remark: remarkModesPending}
	}
	k := Key{group, topic}
	switch (*t.modes.Load())[k].Mode {
	case meta.RequestModePull:
		return &Refusal{Remark: fmt.Sprintf("the consumer group[%s] consumes topic[%s] by PULL (set by SET_MESSAGE_REQUEST_MODE): "+
			"pops are refused; a group is consumed by one model at a time", group, topic)}
	case meta.RequestModePop:
		return nil
	}
	if v, ok := t.pulls.Load(k); ok {
		if until := v.(*atomic.Int64).Load(); now.UnixMilli() < until {
			return &Refusal{Remark: fmt.Sprintf("the consumer group[%s] consumes topic[%s] by PULL (a pull was served; it holds the group until %s): "+
				"pops are refused; a group is consumed by one model at a time", group, topic,
				time.UnixMilli(until).UTC().Format(time.RFC3339Nano))}
		}
	}
	return nil
}

// The writers below are the POP engine's: they run on its goroutine only.

// SetModes publishes modes as the modes set by 401 (the whole table).
func (t *Table) SetModes(modes []meta.RequestMode) {
	m := make(map[Key]meta.RequestMode, len(modes))
	for _, r := range modes {
		m[Key{r.ConsumerGroup, r.Topic}] = r
	}
	t.modes.Store(&m)
}

// SetRecovering says whether the engine is rebuilding its state (pulls of
// groups without a mode wait).
func (t *Table) SetRecovering(on bool) { t.recovering.Store(on) }

// remarkModesPending answers pulls and pops while the modes may lag.
const remarkModesPending = "promoted to master: the request modes the old master logged (SET_MESSAGE_REQUEST_MODE) " +
	"are being applied from the metadata log; pulls and pops wait for them (a group is consumed by one model at a time), retry"

// SetModesPending says whether the modes may lag the ones the old master
// logged (a promotion, until the metadata log applied its records): every
// pull and pop is refused as busy meanwhile.
func (t *Table) SetModesPending(on bool) { t.modesPending.Store(on) }

// ModesPending reports what SetModesPending last said.
func (t *Table) ModesPending() bool { return t.modesPending.Load() }

// MarkReloaded records that the engine dropped its state at a promotion to
// master at epoch and reads the journal again (Recovering is on by then).
func (t *Table) MarkReloaded(epoch int64) { t.reloaded.Store(epoch) }

// ReloadedFor is the epoch of the last MarkReloaded (-1: none). Between a
// promotion and the engine's reload the table still holds what the
// replica knew (nothing in flight): a master at another epoch must not
// trust it.
func (t *Table) ReloadedFor() int64 { return t.reloaded.Load() }

// Recovering reports what SetRecovering last said.
func (t *Table) Recovering() bool { return t.recovering.Load() }

// holdOf returns k's hold, publishing a new map when k is new.
func (t *Table) holdOf(k Key) *hold {
	if h, ok := t.w[k]; ok {
		return h
	}
	h := &hold{}
	t.w[k] = h
	pub := make(map[Key]*hold, len(t.w))
	for kk, hh := range t.w {
		pub[kk] = hh
	}
	t.holds.Store(&pub)
	return h
}

// Popped records a delivery of (group, topic) in flight until deadline
// (ms). It is visible to PullAllowed when Popped returns.
func (t *Table) Popped(group, topic string, deadline int64) {
	h := t.holdOf(Key{group, topic})
	h.count++
	if h.until.Load() < deadline {
		h.until.Store(deadline)
	}
}

// Moved records a delivery's deadline moved to deadline (a change of its
// invisible time).
func (t *Table) Moved(group, topic string, deadline int64) {
	h := t.holdOf(Key{group, topic})
	if h.count > 0 && h.until.Load() < deadline {
		h.until.Store(deadline)
	}
}

// Done records a delivery of (group, topic) acked, expired or dropped.
func (t *Table) Done(group, topic string) {
	h, ok := t.w[Key{group, topic}]
	if !ok || h.count == 0 {
		return
	}
	if h.count--; h.count == 0 {
		h.until.Store(0)
	}
}

// ResetHolds forgets every delivery in flight (the engine drops its state).
func (t *Table) ResetHolds() {
	for _, h := range t.w {
		h.count = 0
		h.until.Store(0)
	}
}

// InFlight is how many deliveries of (group, topic) the table counts in
// flight (engine goroutine only; tests).
func (t *Table) InFlight(group, topic string) int64 {
	if h, ok := t.w[Key{group, topic}]; ok {
		return h.count
	}
	return 0
}
