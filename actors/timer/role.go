package timer

import (
	"errors"
	"io"
	"math"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/storage/commitlog"
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
	return min(d.svc.opts.Store.DurableEnd(), d.svc.opts.Store.CommitLog.MaxOffset())
}

// scan reads the CommitLog from d.scanned up to limit and hands each
// written-back copy found to found (identity and offset).
func (d *dequeuePut) scan(limit int64, found func(id string, off int64)) {
	svc := d.svc
	cl := svc.opts.Store.CommitLog
	off := max(d.scanned, cl.MinOffset())
	for off < limit {
		rec, next, err := cl.Read(off)
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, commitlog.ErrCorrupt) {
			// Damage (the dispatcher reports it): go on after it.
			if to, nerr := cl.NextValid(next); nerr == nil {
				off = to
				continue
			}
		}
		if err != nil {
			svc.opts.Logger.Error().Err(err).Int64("offset", off).Msg("timer copy scan stopped early")
			break
		}
		if next > limit {
			break // a record across the limit is not confirmed yet
		}
		if id, ok := isWrittenBack(rec); ok {
			found(id, off)
		}
		off = next
	}
	d.scanned = off
}

// follow (replica) matches the copies that reached the confirmed log with
// the shadow batches waiting for them; the others are kept for batches
// still to come (the master may fire before this node releases).
func (d *dequeuePut) follow() {
	if !d.svc.shadowing.Load() {
		return
	}
	d.scan(d.scanLimit(), func(id string, off int64) {
		if p, ok := d.awaiting[id]; ok {
			delete(d.awaiting, id)
			p.waiting--
			return
		}
		d.replayed[id] = off
	})
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
			delete(d.replayed, id)
			continue
		}
		d.awaiting[id] = p
		p.waiting++
	}
	d.ackReady()
}

// shadowFrom is where a replica's copy scan must restart after a crash:
// the oldest copy kept for a timer not yet acknowledged, or where the scan
// got to.
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
