package timerwheel

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/timerwheel/checkpoint"
	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// recover rebuilds the in-memory wheel (see Open). It never trusts a
// position that is not covered by durable data: the checkpoint is written
// after the TimerLog sync it refers to, the snapshot after the sync of the
// records it covers, and everything after the snapshot is replayed from the
// TimerLog itself.
func (s *Store) recover(nowMs int64) error {
	latest, hasCk := s.ck.Latest()
	prev, _ := s.ck.Previous()
	if hasCk && latest.Geometry != s.geo {
		return fmt.Errorf("timerwheel open %s: checkpoint geometry %+v, options %+v: %w",
			s.opts.Dir, latest.Geometry, s.geo, ErrIncompatible)
	}
	tl, rep, err := timerlog.Open(timerlog.Options{
		Dir:         filepath.Join(s.opts.Dir, logDirName),
		FS:          s.opts.FS,
		SegmentSize: s.opts.SegmentSize,
		MinKeep:     latest.FlushedSeq,
		NoSync:      s.opts.NoSync,
		Logger:      s.log,
		// Timers due within a minute of being added are walked from the
		// block cache when they come due.
		CacheDueWithinMs: appendCacheMs,
	})
	if err != nil {
		return fmt.Errorf("timerwheel open: %w", err)
	}
	s.tl = tl
	s.st.corrupt += rep.Corrupt
	if rep.Missing {
		s.st.corrupt++
		s.log.Error().Uint64("flushed_seq", latest.FlushedSeq).Uint64("last_seq", tl.Last()).
			Msg("timer log ends before the checkpointed flush position: synced records were lost")
	}
	first, last := tl.First(), tl.Last()

	snap, err := checkpoint.ReadSnapshot(s.opts.FS, s.snapPath)
	if err != nil {
		s.log.Warn().Err(err).Msg("timer snapshot unreadable; replaying the whole log")
		snap = nil
	}
	if snap != nil && snap.Geometry != s.geo {
		return fmt.Errorf("timerwheel open %s: snapshot geometry %+v, options %+v: %w",
			s.opts.Dir, snap.Geometry, s.geo, ErrIncompatible)
	}
	if snap != nil && (snap.Seq > last || snap.Seq+1 < first) {
		s.log.Warn().Uint64("snapshot_seq", snap.Seq).Uint64("log_first", first).Uint64("log_last", last).
			Msg("timer snapshot does not fit the log; replaying the whole log")
		snap = nil
	}
	relinked := int64(math.MinInt64)
	from := first
	if snap != nil {
		s.loadSnapshot(snap, first)
		relinked = snap.RelinkedUpToMs
		from = snap.Seq + 1
		s.snapSeq = snap.Seq
	} else {
		s.snapSeq = first - 1
	}
	if err := s.replay(from, first, &relinked); err != nil {
		return err
	}
	s.resolveMinCL()

	var acked, older Cursor
	switch {
	case hasCk:
		acked = Cursor{Ms: latest.AckedMs, Seq: latest.AckedSeq}
		older = Cursor{Ms: prev.AckedMs, Seq: prev.AckedSeq}
		relinked = max(relinked, latest.RelinkedUpToMs)
		s.maxQO = max(s.maxQO, latest.EnqueueQueueOffset)
		s.flushedSeq = latest.FlushedSeq
		s.durableQO = latest.EnqueueQueueOffset
	case snap != nil:
		acked = Cursor{Ms: snap.AckedMs, Seq: snap.AckedSeq}
		older = acked
	case last >= first:
		// Records but no checkpoint: release everything still linked
		// (duplicates rather than loss).
		acked = Cursor{Ms: nowMs}
		for i := range s.near.slots {
			if sl := &s.near.slots[i]; !sl.empty() {
				acked.Ms = min(acked.Ms, sl.no*s.geo.SlotMs-1)
			}
		}
		older = acked
		s.log.Error().Int64("acked_ms", acked.Ms).Msg("timer store has records but no checkpoint; re-releasing everything linked")
	default:
		acked = Cursor{Ms: nowMs}
		older = acked
	}
	if older.Ms > acked.Ms || older.Ms == math.MinInt64 {
		older = acked
	}
	if relinked == math.MinInt64 {
		relinked = (floorDiv(acked.Ms, s.geo.FarSlotMs) + 1) * s.geo.FarSlotMs
	}
	// A far bucket before the boundary that still holds records would never
	// be relinked: lower the boundary to it.
	for i := range s.far.slots {
		if sl := &s.far.slots[i]; !sl.empty() && sl.no*s.geo.FarSlotMs < relinked {
			s.log.Error().Int64("bucket", sl.no).Int64("relinked_up_to", relinked).Msg("far bucket behind relink boundary")
			relinked = sl.no * s.geo.FarSlotMs
		}
	}
	s.near.rebuildOcc()
	s.far.rebuildOcc()
	s.ringBase = floorDiv(older.Ms-s.tailMs, s.geo.SlotMs)
	acked, relinked = s.fitRing(acked, relinked)
	s.relinkedUpTo = relinked
	s.acked, s.issued = acked, acked
	s.durable = [2]Cursor{older, acked}
	s.sinceSnap = last - s.snapSeq
	s.farCnt = counts{}
	clear(s.far.ahead)
	for i := range s.far.slots {
		if sl := &s.far.slots[i]; !sl.empty() {
			s.far.mark(sl.no)
			s.farCnt.n += int64(sl.n)
			s.farCnt.nc += int64(sl.nc)
		}
	}
	if err := s.resetDequeue(); err != nil {
		return err
	}
	st := s.statsLocked()
	s.log.Info().Uint64("log_first", first).Uint64("log_last", last).Uint64("replayed", s.st.replayed).
		Bool("snapshot", snap != nil).Str("acked", acked.String()).Int64("relinked_up_to", relinked).
		Int64("pending", st.Pending).Int64("enqueue_queue_offset", s.maxQO).Msg("timer store recovered")
	return nil
}

// fitRing makes the recovered near wheel fit its ring from ringBase. While
// running, the retained window skips empty slots ahead of the checkpointed
// ack position (skipEmptyRetained), so records may have been placed up to
// a lap beyond what the checkpoint alone allows. The slots skipped were
// empty, so the window can start a lap below the highest live slot: the
// ack position moves up to that slot boundary (no record lies before it)
// and the relink boundary down to where the ring reaches (the far buckets
// in between are empty; timers added there are relinked again).
func (s *Store) fitRing(acked Cursor, relinked int64) (Cursor, int64) {
	g := &s.geo
	hi := int64(noSlot)
	s.eachOcc(&s.near, func(sl *slot) { hi = max(hi, sl.no) })
	if lo := hi - g.NearSlots + 1; hi != noSlot && lo > s.ringBase {
		var below int
		s.eachOcc(&s.near, func(sl *slot) {
			if sl.no >= s.ringBase && sl.no < lo { // below ringBase: delivered, dropped anyway
				below++
			}
		})
		if below > 0 {
			s.st.corrupt++
			s.log.Error().Int("slots", below).Int64("lo", lo).Msg("near slots below the recovered window are dropped")
		}
		s.ringBase = lo
		if c := (Cursor{Ms: lo * g.SlotMs}); acked.Less(c) {
			acked = c
		}
	}
	if lim := floorDiv(s.ringBase*g.SlotMs+s.nearSpan, g.FarSlotMs) * g.FarSlotMs; relinked > lim {
		relinked = lim
	}
	return acked, relinked
}

// loadSnapshot installs the slots of a snapshot.
func (s *Store) loadSnapshot(sn *checkpoint.Snapshot, logFirst uint64) {
	for _, x := range sn.Near {
		s.near.slots[s.near.idx(x.No)] = slot{no: x.No, head: x.Head, first: x.First, n: x.N, nc: x.NC, minCL: x.MinCLOffset}
	}
	for _, x := range sn.Far {
		s.far.slots[s.far.idx(x.No)] = slot{no: x.No, head: x.Head, first: x.First, n: x.N, nc: x.NC, minCL: x.MinCLOffset}
	}
	for _, g := range sn.Segments {
		if g.First >= logFirst {
			s.segMin[g.First] = g.MinCLOffset
		}
	}
	s.maxQO = sn.EnqueueQueueOffset
}

// replay applies the TimerLog records from..last to the wheel, exactly as
// they were applied when written: each record carries the slot it was
// linked into, and marks carry the state they left. Where two laps of a
// slot number meet in one ring index, the later lap wins (the earlier one
// was dead when the later was written).
func (s *Store) replay(from, logFirst uint64, relinked *int64) error {
	batch := s.recs[:0]
	err := s.tl.Scan(from, func(seq uint64, r timerlog.Record, err error) error {
		s.st.replayed++
		if err != nil {
			s.damagedRecord(seq, err, "skipped during replay")
			if s.opts.OnCorruption == corruption.PolicyStop && s.err == nil {
				// The store opens failed: its stages stop, the broker runs.
				_ = s.fail(fmt.Errorf("timerwheel replay: record %d: %w: %w", seq, corruption.ErrStop, err))
			}
			return nil
		}
		s.replayOne(&r, logFirst, relinked)
		batch = append(batch, r)
		if len(batch) >= 4096 {
			s.noteSegments(batch)
			batch = batch[:0]
		}
		return nil
	})
	s.noteSegments(batch)
	s.recs = batch[:0]
	if err != nil {
		return fmt.Errorf("timerwheel replay: %w", err)
	}
	return nil
}

func (s *Store) replayOne(r *timerlog.Record, logFirst uint64, relinked *int64) {
	if r.Kind.IsMark() {
		head, n, nc := r.MarkState()
		s.setSlot(&s.far, r.Slot, head, n, nc)
		if r.Kind == timerlog.KindRelinkMark && head == 0 {
			*relinked = max(*relinked, (r.Slot+1)*s.geo.FarSlotMs)
		}
		return
	}
	if r.CQOffset >= 0 {
		s.maxQO = max(s.maxQO, r.CQOffset)
	}
	rg := &s.near
	if r.Far() {
		rg = &s.far
	}
	sl := &rg.slots[rg.idx(r.Slot)]
	switch {
	case !sl.empty() && sl.no == r.Slot:
		sl.head = r.Seq
	case sl.empty() || sl.no < r.Slot:
		first, minCL := r.Seq, int64(noCL)
		if r.Prev != 0 {
			// The chain goes on before what we know of it.
			first, minCL = logFirst, checkpoint.MinCLUnknown
		}
		*sl = slot{no: r.Slot, head: r.Seq, first: first, minCL: minCL}
	default:
		return // a record of an older lap
	}
	sl.noteCL(r)
	if r.Kind == timerlog.KindCancel {
		sl.nc++
	} else {
		sl.n++
	}
}
