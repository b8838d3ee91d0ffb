package timerwheel

import (
	"fmt"
	"math"
	"sort"

	"github.com/wheelmq/wheelmq/timerwheel/checkpoint"
	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// CommitLog retention and long timers.
//
// Every slot keeps a bound on the lowest CommitLog offset its normal
// records refer to (cancel records never have their message read, so they
// pin nothing). MinCommitLogOffset is the lowest bound over the slots that
// may still release a timer: CommitLog retention must keep everything from
// there on.
//
// A timer that waits longer than the CommitLog retention would pin its
// message's segment, and every later segment, until it is due. To let the
// segment go, the retention stage copies the message into a new CommitLog
// record and calls Reroute, which re-appends the far bucket's chain with
// the copies pointing at the new records (one atomic group: a move mark
// that empties the bucket, then the copies). Only far buckets are rerouted:
// a near-wheel timer is due within the near span (about 22 minutes) and is
// simply waited for.

// Relocation is where a timer message was copied to in the CommitLog.
type Relocation struct {
	// Offset is the new record's CommitLog offset.
	Offset int64
	// Size is the new record's size.
	Size int32
}

// PinnedBucket is a far bucket whose timers refer to CommitLog offsets
// below a limit.
type PinnedBucket struct {
	// Bucket is the far bucket number (EffMs / FarSlotMs).
	Bucket int64
	// MinCommitLogOffset is the bucket's bound (see MinCommitLogOffset).
	MinCommitLogOffset int64
	// Records is the number of records in the bucket's chain.
	Records int
}

// MinCommitLogOffset returns a CommitLog offset below which no pending
// timer's message lies: CommitLog retention must not delete from there on.
// It covers every slot that may still release a timer (including the near
// slots kept for recovery behind the acknowledged position) and is
// conservative: a far bucket partly relinked keeps its bound until it is
// empty. ok is false when no pending timer refers to a message.
func (s *Store) MinCommitLogOffset() (offset int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	offset = noCL
	s.eachOcc(&s.near, func(sl *slot) {
		if sl.no >= s.ringBase {
			offset = min(offset, sl.minCL)
		}
	})
	s.eachOcc(&s.far, func(sl *slot) { offset = min(offset, sl.minCL) })
	return offset, offset != noCL
}

// PinnedFar lists the far buckets whose timers may refer to CommitLog
// offsets below limit, lowest bound first.
func (s *Store) PinnedFar(limit int64) []PinnedBucket {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PinnedBucket
	s.eachOcc(&s.far, func(sl *slot) {
		if sl.minCL < limit {
			out = append(out, PinnedBucket{Bucket: sl.no, MinCommitLogOffset: sl.minCL, Records: int(sl.n + sl.nc)})
		}
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].MinCommitLogOffset != out[j].MinCommitLogOffset {
			return out[i].MinCommitLogOffset < out[j].MinCommitLogOffset
		}
		return out[i].Bucket < out[j].Bucket
	})
	return out
}

// FarTimersBelow returns the normal timers of far bucket whose message lies
// below limit (none when the bucket is not in the far wheel any more).
func (s *Store) FarTimersBelow(bucket, limit int64) ([]Timer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	sl := s.far.at(bucket)
	if sl == nil {
		return nil, nil
	}
	var out []Timer
	_, err := s.walk(sl.head, math.MaxInt, true, bucket, func(r *timerlog.Record) {
		if r.Kind == timerlog.KindNormal && r.CLOffset >= 0 && r.CLOffset < limit {
			out = append(out, timerOf(r))
		}
	})
	return out, err
}

// Reroute re-appends far bucket's chain (like compaction) with every normal
// record whose CommitLogOffset is a key of to pointing at the relocated
// message instead; the timers keep their delivery and effective times. The
// move mark and the copies are one atomic group: after a crash the bucket
// is either as before (the old messages are still referenced) or rerouted.
// Records whose message is not in to are copied unchanged. It returns how
// many records were rerouted (0 when the bucket left the far wheel, for
// example relinked meanwhile). The caller makes it durable with Flush
// before deleting the old messages.
func (s *Store) Reroute(bucket int64, to map[int64]Relocation) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return 0, err
	}
	if s.far.at(bucket) == nil || len(to) == 0 {
		return 0, nil
	}
	n := 0
	_, err := s.moveWith(bucket, func(r *timerlog.Record) {
		if r.Kind != timerlog.KindNormal {
			return
		}
		if m, ok := to[r.CLOffset]; ok {
			r.CLOffset, r.Size = m.Offset, m.Size
			n++
		}
	})
	if err != nil {
		return 0, fmt.Errorf("timerwheel reroute bucket %d: %w", bucket, err)
	}
	s.st.rerouted += uint64(n)
	return n, nil
}

// resolveMinCL gives the slots whose bound is unknown after recovery (read
// from a version 1 snapshot, or a chain that starts before the replayed
// records) the lowest CommitLog offset of the TimerLog segments their
// chain may span. mu must be held (or the store not yet shared).
func (s *Store) resolveMinCL() {
	fix := func(sl *slot) {
		if sl.minCL != checkpoint.MinCLUnknown {
			return
		}
		sl.minCL = noCL
		from, _, ok := s.tl.SegmentBounds(sl.first)
		for first, v := range s.segMin {
			if (!ok || first >= from) && first <= sl.head {
				sl.minCL = min(sl.minCL, v)
			}
		}
	}
	for i := range s.near.slots {
		if sl := &s.near.slots[i]; !sl.empty() {
			fix(sl)
		}
	}
	for i := range s.far.slots {
		if sl := &s.far.slots[i]; !sl.empty() {
			fix(sl)
		}
	}
}
