package dispatch

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/corruption"
)

// span is a damaged CommitLog span [from, to).
type span struct{ from, to int64 }

const (
	// maxSkips bounds the skipped spans the dispatcher remembers.
	maxSkips = 1024
	// maxProbe bounds the CommitLog bytes read to explain a queue gap the
	// remembered spans do not explain (after a restart).
	maxProbe = 64 << 20
	// maxRebuildWalk bounds how far back a rebuild looks for the first
	// damaged unit before the one reported.
	maxRebuildWalk = 4096
)

// skipping reports whether damage is skipped (PolicySkip) rather than
// fatal.
func (d *Dispatcher) skipping() bool { return d.opts.Store.OnCorruption() == corruption.PolicySkip }

// read reads the CommitLog block at off (into br's buffers; nil: new ones).
// eof is set at the log's end. A damaged entry is skipped under PolicySkip: it is reported, and read
// returns no records with next set to the first entry after it that
// verifies. Under PolicyStop read returns stop, an error wrapping
// corruption.ErrStop and commitlog.ErrCorrupt, with next set to the damaged
// entry; the caller panics with it once it has kept what it read before.
// Other read errors panic (the supervisor restarts the stage).
func (d *Dispatcher) read(br *commitlog.BlockReader, off int64) (recs [][]byte, offs []int64, next int64, eof bool, stop error) {
	cl := d.opts.Store.CommitLog
	recs, offs, next, err := cl.ReadBlockWith(br, off, 0)
	switch {
	case err == nil:
		return recs, offs, next, false, nil
	case errors.Is(err, io.EOF):
		return nil, nil, next, true, nil
	case !errors.Is(err, commitlog.ErrCorrupt):
		panic(fmt.Errorf("dispatch: read commitlog at %d: %w", off, err))
	case !d.skipping():
		d.opts.Logger.Error().Err(err).Int64("offset", next).Str("on_corruption", "stop").
			Msg("dispatch stops at a damaged commitlog entry")
		return nil, nil, next, false, fmt.Errorf("dispatch: read commitlog at %d: %w: %w", next, corruption.ErrStop, err)
	}
	to, nerr := cl.NextValid(next)
	if nerr != nil {
		panic(fmt.Errorf("dispatch: skip damaged commitlog entry at %d: %w", next, nerr))
	}
	d.report(next, to, err.Error())
	return nil, nil, to, false, nil
}

// report counts and logs a skipped CommitLog span (once per span) and
// remembers it for filling queue gaps.
func (d *Dispatcher) report(from, to int64, reason string) {
	st := d.opts.Store
	st.ReportCorruption(d.opts.Logger, corruption.Range{File: corruption.FileCommitLog, Path: st.CommitLog.Dir(),
		From: from, To: to, Reason: reason, Action: "skipped"})
	i := sort.Search(len(d.skips), func(i int) bool { return d.skips[i].from >= from })
	if i < len(d.skips) && d.skips[i].from == from {
		return
	}
	d.skips = append(d.skips, span{})
	copy(d.skips[i+1:], d.skips[i:])
	d.skips[i] = span{from: from, to: to}
	if len(d.skips) > maxSkips {
		d.skips = d.skips[1:]
	}
}

// fillGap handles a record of queue id at CommitLog offset off whose queue
// offset is gap above the queue's end (prev: the commit-log offset of the
// queue's last unit, -1 if none). When a damaged span lies between the two,
// the missing queue offsets' records were lost in it: gap hole units are
// appended to units, inside the span, so that unit index and QUEUEOFFSET
// stay equal. Otherwise the gap is only logged.
func (d *Dispatcher) fillGap(id consumequeue.QueueID, units []consumequeue.Unit, prev, off, gap int64) []consumequeue.Unit {
	s, ok := d.damageBetween(prev, off)
	if ok && off-s.from >= gap {
		for i := int64(0); i < gap; i++ {
			units = append(units, consumequeue.Hole(s.from+i))
		}
		d.opts.Logger.Warn().Str("queue", id.String()).Int64("holes", gap).Int64("damage_from", s.from).
			Int64("damage_to", s.to).Int64("commitlog_offset", off).
			Msg("queue offsets whose records were lost to commitlog damage are holes")
		return units
	}
	d.opts.Logger.Error().Str("topic", id.Topic).Int32("queue", id.QueueID).Int64("missing", gap).
		Int64("commitlog_offset", off).Msg("consume queue gap: units before this record are missing")
	return units
}

// damageBetween returns the first damaged span after prev and before off:
// one skipped since the stage started, or else one found by reading the
// CommitLog in between (bounded by maxProbe).
func (d *Dispatcher) damageBetween(prev, off int64) (span, bool) {
	for _, s := range d.skips {
		if s.from > prev && s.to <= off {
			return s, true
		}
	}
	cl := d.opts.Store.CommitLog
	from := cl.MinOffset()
	if prev >= 0 {
		from = d.after(prev)
	}
	for pos := from; pos < off && pos-from < maxProbe; {
		_, offs, next, err := cl.ReadBlock(pos, 0)
		switch {
		case errors.Is(err, commitlog.ErrCorrupt):
			to, nerr := cl.NextValid(next)
			if nerr != nil || to > off {
				return span{}, false
			}
			d.report(next, to, err.Error())
			return span{from: next, to: to}, true
		case err != nil:
			return span{}, false
		}
		if len(offs) > 0 && offs[0] >= off {
			return span{}, false
		}
		pos = next
	}
	return span{}, false
}

// after returns the offset of the entry after the one at off: right after
// it when it verifies, else (a hole's offset, inside a damaged span) the
// next entry that verifies, without reporting the span again.
func (d *Dispatcher) after(off int64) int64 {
	cl := d.opts.Store.CommitLog
	if _, next, err := cl.Read(off); err == nil {
		return next
	}
	if next, err := cl.NextValid(off); err == nil {
		return next
	}
	return off + 1
}

// repairQueues rebuilds the consume queues readers reported damaged.
func (d *Dispatcher) repairQueues() {
	for id, idx := range d.opts.Store.TakeDamagedUnits() {
		d.rebuildQueue(id, idx)
	}
}

// unitState reads unit idx of q and says whether it leads to its record.
func (d *Dispatcher) unitState(q *consumequeue.Queue, idx int64) (consumequeue.Unit, storage.UnitState) {
	us, err := q.Read(idx, 1)
	if err != nil || len(us) != 1 {
		return consumequeue.Unit{}, storage.UnitUnreadable
	}
	_, states := storage.ReadUnitsChecked(d.opts.Store.CommitLog, us)
	return us[0], states[0]
}

// rebuildQueue rebuilds queue id from its first damaged unit at or before
// idx: the queue's units from there are derived again from the CommitLog
// (up to the dispatched offset) and replace the damaged tail.
func (d *Dispatcher) rebuildQueue(id consumequeue.QueueID, idx int64) {
	st := d.opts.Store
	q := st.Queues.Lookup(id.Topic, id.QueueID)
	if q == nil || idx < q.MinOffset() || idx >= q.MaxOffset() {
		return
	}
	if _, state := d.unitState(q, idx); state != storage.UnitDamaged {
		d.opts.Logger.Debug().Str("queue", id.String()).Int64("unit", idx).Str("state", state.String()).
			Msg("reported consume-queue unit is not damaged; nothing to rebuild")
		return
	}
	cut := idx
	for n := 0; cut > q.MinOffset() && n < maxRebuildWalk; n++ {
		if _, state := d.unitState(q, cut-1); state != storage.UnitDamaged {
			break
		}
		cut--
	}
	start, prev := st.CommitLog.MinOffset(), int64(-1)
	if cut > q.MinOffset() {
		u, _ := d.unitState(q, cut-1)
		prev, start = u.Offset, d.after(u.Offset)
	}
	units := d.collectQueue(id, cut, prev, start)
	old, err := q.Read(cut, int(q.MaxOffset()-cut))
	if err != nil {
		panic(fmt.Errorf("dispatch: rebuild %s: read units: %w", id, err))
	}
	diff := max(len(old), len(units)) - min(len(old), len(units))
	for i := 0; i < min(len(old), len(units)); i++ {
		if old[i] != units[i] {
			diff++
		}
	}
	if err := q.TruncateAt(cut); err != nil {
		panic(fmt.Errorf("dispatch: rebuild %s: %w", id, err))
	}
	if err := q.Append(units...); err != nil {
		panic(fmt.Errorf("dispatch: rebuild %s: append %d units: %w", id, len(units), err))
	}
	st.ReportCorruption(d.opts.Logger, corruption.Range{File: corruption.FileConsumeQueue, Path: id.String(),
		From: cut * consumequeue.UnitSize, To: (cut + int64(diff)) * consumequeue.UnitSize,
		Reason: fmt.Sprintf("unit %d does not lead to its record", idx),
		Action: fmt.Sprintf("rebuilt from the commitlog: %d units from %d, %d replaced", len(units), cut, diff)})
	if d.touched == nil {
		d.touched = map[consumequeue.QueueID]int64{}
	}
	d.touched[id] = q.MaxOffset()
	d.notify()
}

// collectQueue derives queue id's units with queue offsets from cut on from
// the CommitLog between start and the dispatched offset (prev: the
// commit-log offset of the unit before cut, -1 if none).
func (d *Dispatcher) collectQueue(id consumequeue.QueueID, cut, prev, start int64) []consumequeue.Unit {
	var units []consumequeue.Unit
	expected := cut
	for off := start; off < d.offset; {
		recs, offs, next, eof, stop := d.read(nil, off)
		if stop != nil {
			panic(stop)
		}
		if eof {
			break
		}
		for i, rec := range recs {
			if offs[i] >= d.offset {
				break
			}
			u, topic, queueID, qoff, ok, err := d.unitOf(offs[i], rec)
			if err != nil {
				panic(err)
			}
			if !ok || queueID != id.QueueID || string(topic) != id.Topic || qoff < expected {
				continue
			}
			if qoff > expected {
				units = d.fillGap(id, units, prev, u.Offset, qoff-expected)
			}
			units = append(units, u)
			expected, prev = qoff+1, u.Offset
		}
		off = next
	}
	return units
}

// cutQueuesStart returns where dispatching must resume so that the units
// recovery cut from consume-queue tails are added again: right after the
// last unit kept in each such queue (math.MaxInt64 when none was cut).
func cutQueuesStart(st *storage.Store, log zerolog.Logger) int64 {
	from := int64(math.MaxInt64)
	for _, id := range st.Queues.Queues() {
		q := st.Queues.Lookup(id.Topic, id.QueueID)
		if q == nil || q.CutAtOpen() == 0 {
			continue
		}
		pos := st.CommitLog.MinOffset()
		if u, ok := q.LastUnit(); ok {
			pos = u.Offset
			if !u.IsHole() {
				pos += int64(u.Size) + commitlog.EntryOverhead
			}
		}
		log.Warn().Str("queue", id.String()).Int64("cut_bytes", q.CutAtOpen()).Int64("redispatch_from", pos).
			Msg("consume queue tail was cut on open; dispatching it again from the commitlog")
		from = min(from, pos)
	}
	return from
}

// cutUndurableUnits drops the consume-queue units at or above the dispatch
// checkpoint off: the checkpoint is the position below which units were
// made durable, and those above it may point at records a crash took (an
// OS crash or power cut keeps some unsynced pages of a file and not
// others, so a unit can survive the record it names). Dispatch resumes from
// off and writes them again from what the CommitLog holds, so every
// queue's end (which the writer and the start-up reconciliation read) is
// what the CommitLog holds.
func cutUndurableUnits(st *storage.Store, off int64, log zerolog.Logger) {
	for _, id := range st.Queues.Queues() {
		q := st.Queues.Lookup(id.Topic, id.QueueID)
		if q == nil {
			continue
		}
		before := q.MaxOffset()
		if err := q.TruncateAbove(off); err != nil {
			log.Error().Err(err).Str("queue", id.String()).Msg("consume queue: units above the dispatch checkpoint not cut")
			continue
		}
		if cut := before - q.MaxOffset(); cut > 0 {
			log.Debug().Str("queue", id.String()).Int64("units", cut).Int64("checkpoint", off).
				Msg("consume-queue units above the dispatch checkpoint cut; dispatched again")
		}
	}
}
