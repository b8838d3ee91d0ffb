package timer

import (
	"errors"
	"io"
	"math"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/message"
)

// roleChanged follows the broker's role (a role.Holder subscriber): when
// IsMaster flips, delivery starts or stops at once (dequeue_put checks the
// flag before every write-back) and the dequeue side rewinds to its
// acknowledged position, re-releasing in the new mode.
func (s *Service) roleChanged(old, cur role.State) {
	if old.IsMaster() == cur.IsMaster() {
		return
	}
	s.shadowing.Store(!cur.IsMaster())
	if cur.IsMaster() {
		s.opts.Logger.Info().Int64("epoch", cur.Epoch).Msg("timer dequeue: master now, delivering timers without a confirmed copy")
	} else {
		s.opts.Logger.Warn().Int64("epoch", cur.Epoch).Bool("fenced", cur.Fenced).Stringer("role", cur.Kind).
			Msg("timer dequeue: not master, delivery stopped; following the confirmed log")
	}
	s.restartDequeue("role changed to " + cur.Kind.String())
}

// scanLimit is how far dequeue_put looks for written-back copies: the whole
// log on a master (it is the log's owner; a promoted replica's tail becomes
// the master's), the confirmed part on a replica (a copy that truncation
// could remove must not mark its timer delivered).
func (d *dequeuePut) scanLimit() int64 {
	if !d.svc.shadowing.Load() {
		return d.svc.opts.Store.CommitLog.MaxOffset()
	}
	return d.svc.opts.Store.DurableLogEnd()
}

// scan reads the CommitLog from d.scanned up to limit, a block at a time,
// and hands each written-back copy found to found (identity and offset).
// A record that crosses limit is left for the next scan.
func (d *dequeuePut) scan(limit int64, found func(id string, off int64, rec []byte)) {
	svc := d.svc
	cl := svc.opts.Store.CommitLog
	off := max(d.scanned, cl.MinOffset())
	shadowing := svc.shadowing.Load() // a master's replay scan reads no cancels
	for off < limit {
		recs, offs, next, err := cl.ReadBlockWith(&d.block, off, 0)
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, commitlog.ErrCorrupt) {
			// Damage (the dispatcher reports it): go on after it.
			if to, nerr := cl.NextValid(next); nerr == nil && to > off {
				off = to
				continue
			}
		}
		if err != nil {
			svc.opts.Logger.Error().Err(err).Int64("offset", off).Msg("timer copy scan stopped early")
			break
		}
		for i, rec := range recs {
			end := offs[i] + int64(len(rec)) + commitlog.EntryOverhead
			if end > limit {
				d.scanned = offs[i] // not confirmed yet
				return
			}
			if id, ok := isWrittenBack(rec); ok {
				found(id, offs[i], rec)
			} else if shadowing {
				if id, ok := cancelTarget(rec); ok {
					d.sawCancel(id, offs[i]) // cancels.go
				}
			}
		}
		if next <= off {
			break // no progress (cannot happen with a well-formed log): retry next tick
		}
		off = next
	}
	d.scanned = max(d.scanned, min(off, limit))
}

// follow (replica) matches the copies that reached the confirmed log with
// the shadow batches waiting for them; the others are kept for batches
// still to come (the master may fire before this node releases).
func (d *dequeuePut) follow() {
	if !d.svc.shadowing.Load() {
		return
	}
	d.scan(d.scanLimit(), func(id string, off int64, rec []byte) {
		p, ok := d.awaiting[id]
		if !ok && d.svc.stops.stopped(stopOfCopy(rec)) {
			return // a stopped schedule's: no batch waits or will wait for it (stops.go)
		}
		d.replayed[id] = off
		if ok {
			delete(d.awaiting, id)
			p.waiting--
			p.matched = append(p.matched, id)
		}
	})
	d.releaseStopped()
	d.ackReady()
	d.svc.ackedOff.Store(d.shadowFrom())
}

// startShadow takes a batch released on a replica: each timer waits for
// its copy (or has one already) and nothing is written.
func (d *dequeuePut) startShadow(p *pendingBatch) {
	if d.awaiting == nil {
		d.awaiting = map[string]*pendingBatch{}
	}
	for i := range p.pb.puts {
		id := p.pb.puts[i].identity()
		if _, ok := d.replayed[id]; ok {
			p.matched = append(p.matched, id)
			continue
		}
		if d.cancelled(p.pb.puts[i].cancelKey()) || d.svc.stops.stopped(p.pb.puts[i].stopID()) {
			continue // a confirmed cancel or stop ended it: nothing to wait for
		}
		d.awaiting[id] = p
		p.waiting++
	}
	d.ackReady()
}

// shadowAcked forgets the copies of an acknowledged shadow batch: its
// timers are not released again.
func (d *dequeuePut) shadowAcked(p *pendingBatch) {
	for _, id := range p.matched {
		delete(d.replayed, id)
	}
}

// shadowFrom is where a replica's copy scan must restart after a crash:
// the oldest copy kept for a timer not yet acknowledged (copies stay in
// replayed until their batch is acknowledged), or where the scan got to.
func (d *dequeuePut) shadowFrom() int64 {
	from := d.scanned
	for _, off := range d.replayed {
		from = min(from, off)
	}
	if from == math.MaxInt64 {
		return -1
	}
	return from
}

// InitialDequeueMs is the nowMs to open the timer store with
// (timerwheel.Open): nowMs, or the store time of the CommitLog's first
// record when that is older. Open uses it only for a new store; a node
// whose timer store is built from a log it did not run itself (a replica, a
// promoted replica, a copied log) then starts its dequeue position where
// the log starts, so that timers already due when they are enqueued are
// released in due order and a cancel still precedes its target.
func InitialDequeueMs(st *storage.Store, nowMs int64) int64 {
	cl := st.CommitLog
	rec, _, err := cl.Read(cl.MinOffset())
	if err != nil || len(rec) < message.MinRecordSize {
		return nowMs
	}
	if ts := message.PeekStoreTimestamp(rec); ts > 0 && ts < nowMs {
		return ts
	}
	return nowMs
}

// catchUp holds the dequeue side back after a start or a rewind until the
// enqueue side has taken the timer messages the log held then: first the
// dispatcher reaches the log's (confirmed) end as it was, then enqueue
// reaches the timer queue's end as it was at that point. Due on a wheel
// that has not seen them would move its position to now, and timers
// enqueued after that (already due) would be released in arrival order, a
// cancel after its target. This matters on a node whose wheel is built
// from a log it did not run itself (replica, copied log) and after a
// promotion with enqueue lag. The targets are fixed when the wait starts,
// so it ends under a steady flow too.
type catchUp struct {
	logEnd   int64 // dispatch must reach this
	queueEnd int64 // then enqueue this (-1: not read yet)
	stopEnd  int64 // and the stop set this (stops.go)
	finished bool
}

func (s *Service) newCatchUp() catchUp {
	st := s.opts.Store
	return catchUp{logEnd: st.DurableLogEnd(), queueEnd: -1}
}

// done reports whether the catch-up finished.
func (c *catchUp) done(s *Service) bool {
	if c.finished {
		return true
	}
	st := s.opts.Store
	if c.queueEnd < 0 {
		if st.Dispatched.Load() < c.logEnd {
			return false
		}
		c.queueEnd = 0
		if q := st.Queues.Lookup(Topic, 0); q != nil {
			c.queueEnd = q.MaxOffset()
		}
		if q := st.Queues.Lookup(StopTopic, 0); q != nil {
			c.stopEnd = q.MaxOffset()
		}
	}
	if s.opts.Wheel.Checkpoint().EnqueueQueueOffset+1 < c.queueEnd || s.stops.readTo() < c.stopEnd {
		return false
	}
	c.finished = true
	return true
}
