package txcheck

// Reading new half messages, and checking open transactions.

import (
	"errors"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// readBatch bounds the half messages read per message, so that ends and
// ticks are served in between.
const readBatch = 1024

// maxChecksPerTick bounds the checks and give-ups started per tick.
const maxChecksPerTick = 1024

// halfQueue is the half topic's consume queue (nil before the first half
// message).
func (s *Stage) halfQueue() *consumequeue.Queue {
	return s.opts.Store.Queues.Lookup(meta.TopicTransHalf, 0)
}

// readHalf reads half messages from halfNext into pending; it reports
// whether more are waiting.
func (s *Stage) readHalf() bool {
	hq := s.halfQueue()
	if hq == nil {
		return false
	}
	if min := hq.MinOffset(); s.halfNext < min {
		s.opts.Logger.Warn().Int64("from", s.halfNext).Int64("to", min).
			Msg("half messages below the queue's minimum are gone; skipping them")
		s.halfNext = min
		s.dirty = true
	}
	units, err := hq.Read(s.halfNext, readBatch)
	if err != nil && !errors.Is(err, consumequeue.ErrOutOfRange) {
		s.opts.Logger.Error().Err(err).Int64("half_offset", s.halfNext).Msg("read half queue")
	}
	for i, u := range units {
		q := s.halfNext + int64(i)
		if s.endedAhead[q] {
			delete(s.endedAhead, q)
			continue
		}
		if s.pending[q] != nil {
			continue // an end read it first
		}
		h, err := s.readHalfSized(u.Offset, u.Size)
		if err != nil {
			s.opts.Metrics.Unreadable.Inc()
			s.opts.Logger.Error().Err(err).Int64("half_offset", q).Msg("half message unreadable; skipped")
			continue
		}
		s.pending[q] = s.newTx(h, q, 0)
	}
	if len(units) > 0 {
		s.halfNext += int64(len(units))
		s.dirty = true
		s.opts.Metrics.Pending.Set(float64(len(s.pending)))
	}
	return len(units) == readBatch
}

// checks starts the checks (and give-ups) that are due.
func (s *Stage) checks() {
	nowMs := s.now().UnixMilli()
	started := 0
	for _, tx := range s.pending {
		if started >= maxChecksPerTick {
			return
		}
		if tx.ending != nil || tx.checking || nowMs < tx.nextCheck {
			continue
		}
		started++
		h, err := s.readHalfSized(tx.cl, tx.size)
		if err != nil {
			s.opts.Logger.Error().Err(err).Int64("half_offset", tx.q).Msg("half message unreadable; check postponed")
			tx.nextCheck = nowMs + s.tuning().CheckInterval.Milliseconds()
			continue
		}
		if int(tx.checks) >= s.tuning().MaxChecks {
			s.opts.Logger.Warn().Int64("half_offset", tx.q).Str("group", tx.group).Int32("checks", tx.checks).
				Msg("transaction given up after its checks; moved to " + meta.TopicTransCheckMaxTime)
			s.startEnd(tx, h, Discard, nil)
			continue
		}
		s.sendCheck(tx, h, nowMs)
	}
}

// sendCheck asks a producer of the transaction's group for its state.
func (s *Stage) sendCheck(tx *halfTx, h half, nowMs int64) {
	req, err := checkRequest(h, tx.q, tx.checks+1, s.opts.BrokerName)
	if err != nil || tx.group == "" {
		s.opts.Logger.Warn().Err(err).Int64("half_offset", tx.q).Str("group", tx.group).
			Msg("transaction cannot be checked")
		tx.nextCheck = nowMs + s.tuning().CheckInterval.Milliseconds()
		return
	}
	tx.checking = true
	epoch, q := s.epoch, tx.q
	s.opts.ToProducer(&clients.SendToProducer{Group: tx.group, Request: req, Reply: func(client string) {
		s.self.Send(&checkSent{epoch: epoch, q: q, client: client})
	}})
}

// onCheckSent counts a delivered check and schedules the next one. A check
// no producer could take is not counted: the transaction waits for its
// producers to come back.
func (s *Stage) onCheckSent(m *checkSent) {
	tx := s.pending[m.q]
	if m.epoch != s.epoch || tx == nil {
		return
	}
	tx.checking = false
	tx.nextCheck = s.now().UnixMilli() + s.tuning().CheckInterval.Milliseconds()
	if m.client == "" {
		s.opts.Metrics.Checks.WithLabelValues("no_producer").Inc()
		return
	}
	tx.checks++
	s.dirty = true
	s.opts.Metrics.Checks.WithLabelValues("sent").Inc()
	s.opts.Logger.Debug().Int64("half_offset", tx.q).Str("group", tx.group).Str("client", m.client).
		Int32("checks", tx.checks).Msg("transaction check sent")
}
