package txcheck

// END_TRANSACTION: commit and rollback, and the writer's answers.

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/wirecode"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// newTx makes the open transaction of a half message at half offset q.
func (s *Stage) newTx(h half, q int64, checks int32) *halfTx {
	tx := &halfTx{q: q, cl: h.rec.PhysicalOffset, size: h.size, group: h.props[message.PropProducerGroup],
		storeMs: h.rec.StoreTimestamp, checks: checks}
	if v, ok := h.props[message.PropCheckImmunityTimeSec]; ok {
		if sec, err := strconv.ParseInt(v, 10, 64); err == nil && sec > 0 && sec < 1<<31 {
			tx.immunityMs = sec * 1000
		}
	}
	tx.nextCheck = tx.storeMs + max(s.tuning().Timeout.Milliseconds(), tx.immunityMs)
	return tx
}

func (s *Stage) handleEnd(e *End) {
	h, err := s.readHalfAt(e.CommitLogOffset)
	if err != nil {
		s.opts.Logger.Debug().Err(err).Int64("commitlog_offset", e.CommitLogOffset).Msg("end transaction: no half message")
		e.Reply(wirecode.SystemError, "Find prepared transaction message failed")
		return
	}
	if h.props[message.PropProducerGroup] != e.ProducerGroup {
		e.Reply(wirecode.SystemError, "The producer group wrong")
		return
	}
	if h.rec.QueueOffset != e.HalfOffset {
		e.Reply(wirecode.SystemError, "The transaction state table offset wrong")
		return
	}
	if e.Authorize != nil {
		if code, remark := e.Authorize(h.props[message.PropRealTopic]); code != wirecode.Success {
			e.Reply(code, remark)
			return
		}
	}
	q, outcome := h.rec.QueueOffset, Rollback
	if e.Commit {
		outcome = Commit
	}
	if _, has := h.props[message.PropCheckImmunityTimeSec]; has && !e.FromCheck {
		tx := s.newTx(h, q, 0)
		if age := s.now().UnixMilli() - tx.storeMs; age > max(tx.immunityMs, s.tuning().Timeout.Milliseconds()) {
			e.Reply(wirecode.IllegalOperation, fmt.Sprintf("the transaction is %d ms old, past its check immunity: wait for the check", age))
			return
		}
	}
	tx := s.pending[q]
	if tx == nil {
		prev, known := s.recent[q]
		ended := q < s.halfNext || s.endedAhead[q]
		switch {
		case ended && known && prev == outcome:
			e.Reply(wirecode.Success, "")
			return
		case ended && known && prev != Discard:
			e.Reply(wirecode.SystemError, fmt.Sprintf("the transaction was already ended: %s", prev))
			return
		case ended && !known:
			// Ended long ago (or before a restart): the outcome is no longer
			// remembered; repeating an end is answered as done.
			e.Reply(wirecode.Success, "")
			return
		}
		// Not read from the half queue yet, or given up (a late end of a
		// given-up transaction is still applied).
		tx = s.newTx(h, q, 0)
		s.pending[q] = tx
		delete(s.endedAhead, q) // open again until this end is stored
		s.dirty = true
	}
	if en := tx.ending; en != nil {
		if en.outcome == outcome {
			en.waiters = append(en.waiters, e.Reply)
			return
		}
		e.Reply(wirecode.SystemError, fmt.Sprintf("the transaction is being ended: %s", en.outcome))
		return
	}
	s.startEnd(tx, h, outcome, e.Reply)
}

// startEnd writes the first record of an end.
func (s *Stage) startEnd(tx *halfTx, h half, o Outcome, reply func(int32, string)) {
	s.nextID++
	en := &ending{id: s.nextID, outcome: o, floor: s.opts.Store.CommitLog.MaxOffset()}
	if reply != nil {
		en.waiters = append(en.waiters, reply)
	}
	nowMs := s.now().UnixMilli()
	switch o {
	case Commit:
		key, rec, code, remark := commitRecord(h, nowMs, s.opts.Timer)
		if code != 0 {
			en.answer(code, remark)
			return
		}
		s.begin(tx, en)
		s.append(key, rec, en, tx.q, stepFinal)
	case Rollback:
		rec, err := opRecord(h, tx.q, Rollback, nowMs)
		if err != nil {
			en.answer(wirecode.SystemError, err.Error())
			return
		}
		s.begin(tx, en)
		s.append(writer.QueueKey{Topic: meta.TopicTransOpHalf}, rec, en, tx.q, stepOp)
	case Discard:
		rec, err := discardRecord(h, tx.checks, nowMs)
		if err != nil {
			s.opts.Logger.Error().Err(err).Int64("half_offset", tx.q).Msg("transaction cannot be given up")
			tx.nextCheck = nowMs + s.tuning().CheckInterval.Milliseconds()
			return
		}
		if s.opts.EnsureTopic != nil {
			s.opts.EnsureTopic(meta.TopicTransCheckMaxTime)
		}
		s.begin(tx, en)
		s.append(writer.QueueKey{Topic: meta.TopicTransCheckMaxTime}, rec, en, tx.q, stepFinal)
	}
}

func (s *Stage) begin(tx *halfTx, en *ending) {
	tx.ending = en
	s.inflight[en.id] = en.floor
}

// append hands one record to the writer; the answer comes back as written.
func (s *Stage) append(key writer.QueueKey, rec []byte, en *ending, q int64, st step) {
	w := &written{epoch: s.epoch, id: en.id, q: q, outcome: en.outcome, step: st}
	s.opts.Append(&writer.Append{Key: key, Records: [][]byte{rec}, Kind: stats.KindTransaction, Reply: func(res writer.Result) {
		w.res = res
		s.self.Send(w)
	}})
}

func (en *ending) answer(code int32, remark string) {
	for _, w := range en.waiters {
		w(code, remark)
	}
	en.waiters = nil
}

// writeFailure maps a writer error to the answer a client gets.
func writeFailure(err error) (int32, string) {
	if errors.Is(err, syscall.ENOSPC) {
		return wirecode.ServiceNotAvailable, err.Error()
	}
	return wirecode.SystemError, err.Error()
}

func (s *Stage) onWritten(w *written) {
	if w.epoch != s.epoch {
		// An append of the instance before a restart: its effect is applied
		// like a scanned record.
		if w.res.Err == nil && (w.step == stepFinal || w.outcome == Rollback) {
			s.endStored(w.q, w.outcome, s.scanFrom)
		}
		return
	}
	s.restartFloor = -1 // every append of the previous instance was answered before this one
	tx := s.pending[w.q]
	var en *ending
	if tx != nil && tx.ending != nil && tx.ending.id == w.id {
		en = tx.ending
	}
	switch {
	case en == nil:
		// The op record after a commit or discard (or an end that was
		// already applied from elsewhere).
		if w.res.Err != nil {
			s.opts.Logger.Warn().Err(w.res.Err).Int64("half_offset", w.q).Str("outcome", w.outcome.String()).
				Msg("op record not written; the transaction stays ended (its message record is stored)")
		}
	case w.res.Err != nil:
		tx.ending = nil
		delete(s.inflight, en.id)
		code, remark := writeFailure(w.res.Err)
		en.answer(code, remark)
		s.opts.Logger.Warn().Err(w.res.Err).Int64("half_offset", w.q).Str("outcome", en.outcome.String()).
			Msg("end transaction not stored; the transaction stays open")
		if en.outcome == Discard {
			tx.nextCheck = s.now().UnixMilli() + s.tuning().CheckInterval.Milliseconds()
		}
	case w.step == stepFinal:
		h, err := s.readHalfSized(tx.cl, tx.size)
		s.endStored(w.q, en.outcome, en.floor) // the commit or discard record is stored: ended
		if err != nil {
			s.opts.Logger.Warn().Err(err).Int64("half_offset", w.q).Msg("op record not written")
			return
		}
		rec, err := opRecord(h, w.q, en.outcome, s.now().UnixMilli())
		if err != nil {
			s.opts.Logger.Warn().Err(err).Int64("half_offset", w.q).Msg("op record not written")
			return
		}
		s.append(writer.QueueKey{Topic: meta.TopicTransOpHalf}, rec, en, w.q, stepOp)
	default: // the op record of a rollback
		s.endStored(w.q, en.outcome, en.floor)
	}
}

// undurableEnd is a transaction ended by a record that may not survive a
// crash yet: it lies below end, at or after floor.
type undurableEnd struct {
	q, cl      int64
	checks     int32
	floor, end int64
}

// endStored applies an end whose record the writer just stored at or after
// floor; while that record is not durable the transaction stays open in
// the persisted state (see Stage.undurable).
func (s *Stage) endStored(q int64, o Outcome, floor int64) {
	st := s.opts.Store
	if tx := s.pending[q]; tx != nil {
		if end := st.CommitLog.MaxOffset(); end > st.DurableEnd() {
			s.undurable = append(s.undurable, undurableEnd{q: q, cl: tx.cl, checks: tx.checks, floor: floor, end: end})
		}
	}
	s.markEnded(q, o)
}

// markEnded records that the transaction at half offset q ended with o;
// an end in progress for it is answered.
func (s *Stage) markEnded(q int64, o Outcome) {
	if tx := s.pending[q]; tx != nil {
		if en := tx.ending; en != nil {
			delete(s.inflight, en.id)
			if en.outcome == o {
				en.answer(wirecode.Success, "")
			} else {
				en.answer(wirecode.SystemError, fmt.Sprintf("the transaction was already ended: %s", o))
			}
		}
		delete(s.pending, q)
		s.opts.Metrics.Ends.WithLabelValues(o.String()).Inc()
		if o == Discard {
			s.opts.Metrics.Discarded.Inc()
		}
	}
	if q >= s.halfNext {
		s.endedAhead[q] = true
	}
	s.remember(q, o)
	s.dirty = true
	s.opts.Metrics.Pending.Set(float64(len(s.pending)))
}

// remember keeps the outcome of q for repeated ends (bounded).
func (s *Stage) remember(q int64, o Outcome) {
	if _, ok := s.recent[q]; !ok {
		if len(s.recentOrder) < recentCap {
			s.recentOrder = append(s.recentOrder, q)
		} else {
			delete(s.recent, s.recentOrder[s.recentAt])
			s.recentOrder[s.recentAt] = q
			s.recentAt = (s.recentAt + 1) % recentCap
		}
	}
	s.recent[q] = o
}
