package timerwheel

import (
	"math/bits"
	"slices"
	"sort"

	"github.com/wheelmq/wheelmq/timerwheel/checkpoint"
	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// Flush is the group commit of the timer store, in this order:
//
//  1. capture the positions (ack cursor, last TimerLog sequence, relink
//     boundary, enqueue queue offset) and, every SnapshotEvery records, the
//     wheel snapshot;
//  2. fsync the TimerLog up to the captured sequence (and the directory
//     when segments were created);
//  3. write the snapshot (atomic rename), then the checkpoint (fsync).
//
// So the checkpoint never points past data that is durable. Afterwards
// Flush advances the retained near-wheel window to the older of the last
// two checkpointed ack positions, drops TimerLog segments that no live
// chain needs, and moves up to CompactBudget records of old far buckets so
// that more segments can go later. Adds and Dues are not blocked during the
// fsyncs. Call it periodically (every few to few hundred milliseconds).
func (s *Store) Flush() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()

	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	last := s.tl.Last()
	acked := s.durableAckCandidate()
	ck := checkpoint.Checkpoint{
		AckedMs:            acked.Ms,
		AckedSeq:           acked.Seq,
		FlushedSeq:         last,
		SnapshotSeq:        s.snapSeq,
		RelinkedUpToMs:     s.relinkedUpTo,
		EnqueueQueueOffset: s.maxQO,
		Geometry:           s.geo,
	}
	since := s.sinceSnap
	var snap []byte
	if since > 0 && (since >= uint64(s.opts.SnapshotEvery) || s.wantSnap) {
		snap = checkpoint.EncodeSnapshot(s.snapshot(acked))
	}
	s.mu.Unlock()

	if err := s.tl.SyncTo(last); err != nil {
		return s.failLocked(err)
	}
	if snap != nil {
		if err := checkpoint.WriteSnapshot(s.opts.FS, s.snapPath, snap, !s.opts.NoSync); err != nil {
			return s.failLocked(err)
		}
		ck.SnapshotSeq = last
	}
	if err := s.ck.Write(ck); err != nil {
		return s.failLocked(err)
	}

	s.mu.Lock()
	s.flushedSeq = last
	s.durableQO = ck.EnqueueQueueOffset
	s.durable = [2]Cursor{s.durable[1], {Ms: ck.AckedMs, Seq: ck.AckedSeq}}
	if snap != nil {
		s.snapSeq = last
		s.sinceSnap -= since
		s.wantSnap = false
	}
	s.advanceRingBase()
	var cut uint64
	gc := false
	if segs, _ := s.tl.Segments(); segs >= 3 {
		gc = true
		cut = s.truncateTarget()
	}
	s.mu.Unlock()

	if cut > 0 {
		first, err := s.tl.TruncateFront(cut)
		s.mu.Lock()
		if err != nil {
			err = s.fail(err)
			s.mu.Unlock()
			return err
		}
		for k := range s.segMin {
			if k < first {
				delete(s.segMin, k)
				s.st.truncated++
			}
		}
		s.mu.Unlock()
	}
	if !gc {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.compact()
}

func (s *Store) failLocked(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail(err)
}

// durableAckCandidate is the acknowledged position Flush may make durable:
// the acknowledged one, held back to the limit LimitDurableAck set. mu must
// be held.
func (s *Store) durableAckCandidate() Cursor {
	if s.ackLimit != nil && s.ackLimit.Less(s.acked) {
		return *s.ackLimit
	}
	return s.acked
}

// LimitDurableAck bounds the acknowledged position that Flush makes
// durable to c: Flush writes the older of c and the acknowledged position.
// The dequeue side sets it to the position up to which the write-backs of
// acknowledged timers are themselves durable (in the CommitLog, see
// storage.DurableEnd), so that a crash that loses a write-back finds its
// timer not acknowledged and releases it again: a timer is acknowledged
// durably only after its delivery is. Before the first call Flush writes
// the acknowledged position as it is.
func (s *Store) LimitDurableAck(c Cursor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ackLimit = &c
}

// snapshot captures the wheel as of the last TimerLog record, with acked
// as its acknowledged position. mu must be held.
func (s *Store) snapshot(acked Cursor) *checkpoint.Snapshot {
	sn := &checkpoint.Snapshot{
		Seq:                s.tl.Last(),
		AckedMs:            acked.Ms,
		AckedSeq:           acked.Seq,
		RelinkedUpToMs:     s.relinkedUpTo,
		EnqueueQueueOffset: s.maxQO,
		Geometry:           s.geo,
	}
	s.eachOcc(&s.near, func(sl *slot) {
		if sl.no >= s.ringBase {
			sn.Near = append(sn.Near, checkpoint.Slot{No: sl.no, Head: sl.head, First: sl.first, N: sl.n, NC: sl.nc,
				MinCLOffset: sl.minCL})
		}
	})
	s.eachOcc(&s.far, func(sl *slot) {
		sn.Far = append(sn.Far, checkpoint.Slot{No: sl.no, Head: sl.head, First: sl.first, N: sl.n, NC: sl.nc,
			MinCLOffset: sl.minCL})
	})
	for first, v := range s.segMin {
		sn.Segments = append(sn.Segments, checkpoint.Segment{First: first, MinCLOffset: v})
	}
	slices.SortFunc(sn.Segments, func(a, b checkpoint.Segment) int {
		switch {
		case a.First < b.First:
			return -1
		case a.First > b.First:
			return 1
		}
		return 0
	})
	return sn
}

// advanceRingBase moves the oldest retained near slot up to the older of
// the last two checkpointed ack positions minus the cancel tail, clearing
// the slots it passes. Keeping the older one means a torn write of the
// newest checkpoint copy still finds every slot it needs. mu must be held.
func (s *Store) advanceRingBase() {
	older := s.durable[0]
	if s.durable[1].Less(older) {
		older = s.durable[1]
	}
	nb := min(floorDiv(older.Ms-s.tailMs, s.geo.SlotMs), s.base)
	if nb <= s.ringBase {
		return
	}
	for from := s.ringBase; ; {
		no, ok := s.near.nextOcc(from, nb)
		if !ok {
			break
		}
		s.near.clearSlot(s.near.idx(no))
		from = no + 1
	}
	if nb-s.ringBase > s.geo.NearSlots { // more than a lap: catch slots of older laps
		for i := range s.near.slots {
			if sl := &s.near.slots[i]; !sl.empty() && sl.no < nb {
				s.near.clearSlot(int64(i))
			}
		}
	}
	s.ringBase = nb
}

// entriesPerSegment is how many records wal puts in a segment.
func (s *Store) entriesPerSegment() uint64 {
	return (uint64(s.opts.SegmentSize) + timerlog.EntrySize - 1) / timerlog.EntrySize
}

// liveFirst returns the oldest TimerLog sequence a live chain needs and the
// number of records in live chains. mu must be held.
func (s *Store) liveFirst() (first uint64, live uint64) {
	first = s.tl.Last() + 1
	visit := func(sl *slot) {
		first = min(first, sl.first)
		live += uint64(sl.n + sl.nc)
	}
	s.eachOcc(&s.near, func(sl *slot) {
		if sl.no >= s.ringBase {
			visit(sl)
		}
	})
	s.eachOcc(&s.far, visit)
	return first, live
}

// eachOcc calls fn for every non-empty slot of rg, in ring order.
func (s *Store) eachOcc(rg *ring, fn func(*slot)) {
	for w, word := range rg.occ {
		for word != 0 {
			i := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if sl := &rg.slots[i]; !sl.empty() {
				fn(sl)
			}
		}
	}
}

// truncateTarget returns the sequence to truncate the TimerLog front to, or
// 0 when fewer than two segments could go. Recovery replays from the
// snapshot, so nothing after it may go; when the snapshot is what holds
// truncation back, the next Flush writes a new one. mu must be held.
func (s *Store) truncateTarget() uint64 {
	live, _ := s.liveFirst()
	cut := min(live, s.snapSeq+1)
	if last := s.tl.Last(); cut > last {
		cut = last
	}
	first := s.tl.First()
	segFirst, _, ok := s.tl.SegmentBounds(cut)
	enough := func(to uint64) bool { return to >= first+2*s.entriesPerSegment() }
	if live > s.snapSeq+1 {
		if lf, _, ok := s.tl.SegmentBounds(min(live, s.tl.Last())); ok && enough(lf) {
			s.wantSnap = true
		}
	}
	if !ok || !enough(segFirst) {
		return 0
	}
	return segFirst
}

// compact moves far buckets whose oldest record lies in the older half of
// the TimerLog when the log holds more than twice the live records (plus
// four segments), up to CompactBudget records per call. Buckets larger than
// four budgets are left to their relink. mu must be held.
func (s *Store) compact() error {
	budget := uint64(s.opts.CompactBudget)
	if budget == 0 || s.usable() != nil {
		return nil
	}
	_, live := s.liveFirst()
	first, last := s.tl.First(), s.tl.Last()
	if last < first || last+1-first <= 2*live+4*s.entriesPerSegment() {
		return nil
	}
	target := first + (last+1-first)/2
	var cands []int64
	for i := range s.far.slots {
		if sl := &s.far.slots[i]; !sl.empty() && sl.first < target && uint64(sl.n+sl.nc) <= 4*budget {
			cands = append(cands, sl.no)
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		return s.far.at(cands[i]).first < s.far.at(cands[j]).first
	})
	var moved uint64
	for _, f := range cands {
		if moved >= budget {
			break
		}
		n, err := s.move(f)
		if err != nil {
			return err
		}
		moved += uint64(n)
	}
	if moved > 0 {
		s.log.Debug().Uint64("moved", moved).Uint64("log_records", last+1-first).Uint64("live", live).
			Msg("timer compaction moved far buckets")
	}
	return nil
}
