package pop

import (
	"time"

	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/stage"
)

// Recovery at start: the journal is read from its consume queue, which the
// dispatch stage rebuilds from the CommitLog after a crash. Reading it
// before the dispatch stage has indexed the CommitLog as it was at start
// would miss the newest acks (an acked message delivered again) and pops
// (a delivery in flight offered early), so requests that reach the stage
// before then are held, and answered when the journal is in.

// maxRecoverWait bounds the wait for the dispatch stage: past it the
// journal is read as far as it is indexed (acks beyond it may deliver a
// message again: duplicates, never a loss) and an error is logged.
const maxRecoverWait = 30 * time.Second

// maxHeld bounds how long a request waits for the journal before it is
// answered "recovering" (pops: at their poll time, if earlier).
const maxHeld = 5 * time.Second

// remarkRecovering answers the requests that waited too long.
const remarkRecovering = "pop state is being recovered from its journal, retry"

// heldMsg is a request that came before the journal was read.
type heldMsg struct {
	msg any
	at  time.Time
}

// recovered reports whether the journal has been read, reading it once the
// dispatch stage has indexed the CommitLog up to its end at start.
func (e *Engine) recovered() bool {
	if e.replayOK {
		return true
	}
	now := e.opts.Now()
	if e.recoverSince.IsZero() {
		e.recoverSince = now
	}
	if d := e.opts.Store.Dispatched.Load(); d < e.startEnd && !e.lagLogged {
		if now.Sub(e.recoverSince) < maxRecoverWait {
			return false
		}
		e.lagLogged = true
		e.opts.Logger.Error().Int64("dispatched", d).Int64("commitlog_end_at_start", e.startEnd).
			Dur("waited", now.Sub(e.recoverSince)).
			Msg("pop journal: the consume queues did not reach the CommitLog's end at start; reading the journal as far as it is indexed (acks beyond it may deliver messages again)")
	}
	if !e.modesApplied(now) {
		return false
	}
	if !e.startAsked {
		e.startAsked, e.askedAt = true, now
		if e.askReplayStart() {
			return false // replayFrom comes back
		}
		e.startKnown = true
	}
	if !e.startKnown {
		if now.Sub(e.askedAt) < maxReplayStartWait {
			return false
		}
		e.startKnown = true
		e.opts.Logger.Warn().Msg("pop journal: the offsets stage did not answer for the replay start; reading the whole journal")
	}
	e.replay()
	e.replayOK = true
	e.replayedAsMaster = e.opts.Master != nil && e.opts.Master()
	e.initReplayed()
	e.noteRecovery()
	return true
}

// hold keeps m until the journal is read.
func (e *Engine) hold(m any) { e.held = append(e.held, heldMsg{msg: m, at: e.opts.Now()}) }

// answerHeld answers the held requests past their wait (all of them when
// all is set: the stage restarts).
func (e *Engine) answerHeld(all bool) {
	now := e.opts.Now()
	kept := e.held[:0]
	for _, h := range e.held {
		late := all || now.Sub(h.at) >= maxHeld
		if p, ok := h.msg.(*Pop); ok && !now.Before(p.PollUntil) && now.Sub(h.at) >= 100*time.Millisecond {
			late = true
		}
		if !late {
			kept = append(kept, h)
			continue
		}
		switch m := h.msg.(type) {
		case *Pop:
			m.Reply(&Result{Code: CodePollingTimeout, Remark: remarkRecovering})
		case *Ack:
			m.Reply(CodeSystemError, remarkRecovering)
		case *BatchAck:
			m.Reply(CodeSystemError, remarkRecovering, nil)
		case *DeadLetter:
			m.Reply(CodeSystemError, remarkRecovering)
		case *Change:
			m.Reply(CodeSystemError, remarkRecovering, Handle{})
		}
	}
	clear(e.held[len(kept):])
	e.held = kept
}

// Reload drops the POP state and reads the journal again once the consume
// queues reach the CommitLog's current end: a replica promoted to master
// holds the old master's journal records (replication copied them into its
// CommitLog) but not the state they describe. Epoch is the replication
// epoch of the promotion (mode.Table.ReloadedFor).
type Reload struct{ Epoch int64 }

// reload serves Reload.
func (e *Engine) reload(epoch int64) {
	e.answerParked()
	e.answerHeld(true)
	e.queues, e.pending, e.replayed = map[qkey]*qstate{}, map[qkey]bool{}, nil
	e.heap = nil
	e.inflight.Store(0)
	e.modes.ResetHolds()
	e.modes.SetRecovering(true)
	e.modesGate = e.opts.ModesApplied != nil
	e.modes.SetModesPending(e.modesGate)
	e.modes.MarkReloaded(epoch) // after SetRecovering: pulls and pops wait for the replay from here on
	e.replayOK, e.recoverSince = false, time.Time{}
	e.startAsked, e.startKnown, e.replayStartOff, e.dlqPending, e.lagLogged = false, false, 0, 0, false
	e.storedStart, e.replayedAsMaster = 0, false // the start read back (replayFrom) or the next computed one is stored
	e.startEnd = e.opts.Store.DurableLogEnd()
	e.opts.Logger.Info().Int64("commitlog_end", e.startEnd).Msg("pop: state dropped; the journal is read again (promoted to master)")
	e.recovered()
}

// modesApplied reports whether, after a promotion, the metadata log has
// applied every record below startEnd (Options.ModesApplied): the modes
// 401 set on the old master are in the table before anything is served
// by them. Past maxRecoverWait the engine goes on with the modes it has
// (logged).
func (e *Engine) modesApplied(now time.Time) bool {
	if !e.modesGate {
		return true
	}
	ok, err := e.opts.ModesApplied(e.startEnd)
	if !ok && now.Sub(e.recoverSince) < maxRecoverWait {
		return false
	}
	if !ok {
		e.opts.Logger.Error().Err(err).Int64("commitlog_end", e.startEnd).Dur("waited", now.Sub(e.recoverSince)).
			Msg("pop: the metadata log did not apply the old master's records; serving with the request modes applied so far " +
				"(a 401 it answered last may be missing)")
	}
	e.modesGate = false
	e.modes.SetModesPending(false)
	return true
}

// initReplayed rebuilds, right after the replay, the state of every queue
// the journal has entries of (over its committed offset, from the offsets
// stage), instead of on its first pop: deliveries in flight get their
// deadlines back on the wheel even when their consumers do not come back,
// and the journal's replay start is not held by queues nobody pops.
func (e *Engine) initReplayed() {
	var st *stage.Stage
	if e.opts.Offsets != nil {
		st = e.opts.Offsets()
	}
	for k := range e.replayed {
		if _, ok := e.queues[k]; ok || e.pending[k] {
			continue
		}
		if st == nil || e.self == nil {
			s := newQState(e.initialOffset(k, InitMin))
			e.queues[k] = s
			e.applyReplayed(k, s)
			continue
		}
		e.pending[k] = true
		k := k
		self := e.self
		st.Send(&offsets.Query{Group: k.group, Topic: k.topic, QueueID: k.queue,
			Reply: func(off int64, ok bool) {
				if !ok {
					off, ok = e.initialOffsetSafe(k, InitMin), true
				}
				self.Send(&initDone{key: k, off: off, ok: ok})
			},
			FailFunc: func(error) { self.Send(&initDone{key: k}) }})
	}
}
