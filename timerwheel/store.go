package timerwheel

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/vfs"
	"github.com/wheelmq/wheelmq/timerwheel/checkpoint"
	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// File names inside Options.Dir.
const (
	logDirName     = "timerlog"
	checkpointName = "checkpoint"
	snapshotName   = "wheel.snap"
)

// counts are normal and cancel record counts.
type counts struct{ n, nc int64 }

func (c *counts) add(r *timerlog.Record, d int64) {
	if r.Kind == timerlog.KindCancel {
		c.nc += d
	} else {
		c.n += d
	}
}

// tomb is an active cancel: normal timers with its key hash and DeliverMs
// in [lo, hi] are suppressed.
type tomb struct{ lo, hi int64 }

// Store is the timer store. Its methods are safe for concurrent use; the
// intended callers are the enqueue-put stage (Add), the dequeue stages
// (Due, Ack, Rewind, NextDue) and a flusher (Flush).
//
// Lock order: flushMu before mu. The TimerLog has its own lock, taken
// inside mu; Flush fsyncs with neither mu nor the TimerLog's lock held.
type Store struct {
	opts     Options
	geo      checkpoint.Geometry
	log      zerolog.Logger
	tl       *timerlog.Log
	ck       *checkpoint.File
	snapPath string
	tailMs   int64 // how far behind the ack position slots are kept: 2*CancelWindow+1
	nearSpan int64 // NearSlots*SlotMs

	flushMu sync.Mutex // serialises Flush and Close

	mu     sync.Mutex // guards everything below
	err    error      // sticky failure
	closed bool

	near, far    ring
	relinkedUpTo int64 // far buckets starting before this were relinked (ms, multiple of FarSlotMs)
	base         int64 // next near slot to load into ready
	ringBase     int64 // oldest near slot kept (from the older durable ack)

	issued, acked Cursor
	ackLimit      *Cursor   // the most Flush may make durable of acked (nil: all of it)
	durable       [2]Cursor // acked cursors of the two latest checkpoints: older, newer
	ready         readyHeap
	tombs         map[uint64]tomb
	tombMinHi     int64 // no tombstone expires before this

	maxQO      int64            // highest queue offset added
	durableQO  int64            // maxQO in the last checkpoint written
	segMin     map[uint64]int64 // TimerLog segment first seq -> min CommitLog offset (resolveMinCL)
	snapSeq    uint64           // TimerLog seq the snapshot on disk covers
	flushedSeq uint64
	sinceSnap  uint64 // records appended after snapSeq
	wantSnap   bool   // truncation waits for a newer snapshot

	relinkBudget int // records Due may still relink ahead of need in this call

	nearAhead, farCnt, readyCnt counts
	st                          counters
	recs                        []timerlog.Record // scratch for appends
	loadNos                     []int64           // scratch: slots loaded together
	chains                      chainHeap         // scratch: their walk positions
}

// counters are monotonic event counts since Open.
type counters struct {
	added, dupAdds, issued, delivered, cancelled, cancels uint64
	relinked, rolled, moved, corrupt, stalls, truncated   uint64
	replayed, rerouted                                    uint64
}

// Open opens or creates the store in opts.Dir and recovers it: the
// TimerLog tail is repaired, the wheel is rebuilt from the snapshot plus the
// records after it, and dequeue resumes after the last checkpointed Ack.
// nowMs initialises the dequeue position of a new store; it is not used to
// skip anything on recovery.
func Open(opts Options, nowMs int64) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if opts.Corruption == nil {
		opts.Corruption = corruption.NewMetrics(nil) // still reports each record once
	}
	if err := vfs.MkdirAllSynced(opts.FS, opts.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("timerwheel open %s: %w", opts.Dir, err)
	}
	return open(opts, nowMs)
}

// open builds a store from the files in opts.Dir (Open's recovery) with
// opts already defaulted.
func open(opts Options, nowMs int64) (*Store, error) {
	s := &Store{
		opts:      opts,
		geo:       opts.geometry(),
		log:       opts.Logger.With().Str("component", "timerwheel").Logger(),
		snapPath:  filepath.Join(opts.Dir, snapshotName),
		tailMs:    2*opts.cancelWindowMs() + 1,
		nearSpan:  int64(opts.NearSlots) * opts.SlotMs,
		tombs:     make(map[uint64]tomb),
		segMin:    make(map[uint64]int64),
		maxQO:     -1,
		durableQO: -1,
	}
	s.near = newRing(s.geo.NearSlots)
	s.far = newRing(s.geo.FarSlots)
	ck, err := checkpoint.Open(opts.FS, filepath.Join(opts.Dir, checkpointName))
	if err != nil {
		return nil, err
	}
	s.ck = ck
	ck.NoSync = opts.NoSync
	if err := s.recover(nowMs); err != nil {
		_ = ck.Close()
		if s.tl != nil {
			_ = s.tl.Close()
		}
		return nil, err
	}
	return s, nil
}

// usable returns the error that stops a method: closed or failed.
// mu must be held.
func (s *Store) usable() error {
	if s.closed {
		return ErrClosed
	}
	if s.err != nil {
		return fmt.Errorf("%w: %w", ErrFailed, s.err)
	}
	return nil
}

// fail records a sticky failure. mu must be held.
func (s *Store) fail(err error) error {
	if s.err == nil {
		s.err = err
		s.log.Error().Err(err).Msg("timer store failed; reopen to recover")
	}
	return fmt.Errorf("%w: %w", ErrFailed, err)
}

// appendRecs writes records to the TimerLog and notes their segments.
// mu must be held.
func (s *Store) appendRecs(recs []timerlog.Record) error {
	if err := s.tl.Append(recs); err != nil {
		return s.fail(err)
	}
	s.sinceSnap += uint64(len(recs))
	s.noteSegments(recs)
	return nil
}

// noteSegments keeps the per-segment minimum CommitLog offset.
// mu must be held.
func (s *Store) noteSegments(recs []timerlog.Record) {
	var first, next uint64
	for i := range recs {
		r := &recs[i]
		if r.Kind.IsMark() || r.CLOffset < 0 {
			continue
		}
		if r.Seq < first || r.Seq >= next {
			var ok bool
			if first, next, ok = s.tl.SegmentBounds(r.Seq); !ok {
				continue
			}
		}
		if v, ok := s.segMin[first]; !ok || r.CLOffset < v {
			s.segMin[first] = r.CLOffset
		}
	}
}

// Close flushes (see Flush) and closes the store.
func (s *Store) Close() error {
	flushErr := s.Flush()
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	err := s.tl.Close()
	if cerr := s.ck.Close(); err == nil {
		err = cerr
	}
	if flushErr != nil {
		return flushErr
	}
	return err
}

// Checkpoint reports the store's positions.
type Checkpoint struct {
	// EnqueueQueueOffset is the highest rmq_sys_wheel_timer queue offset
	// added (-1: none). Enqueue-get resumes reading the consume queue at
	// EnqueueQueueOffset+1; after a crash it is what the TimerLog holds.
	EnqueueQueueOffset int64
	// Issued is the position up to which Due has released timers.
	Issued Cursor
	// Acked is the position acknowledged with Ack.
	Acked Cursor
	// DurableAcked is the ack position in the last checkpoint written by
	// Flush: what a crash now would resume from.
	DurableAcked Cursor
	// DurableEnqueueQueueOffset is the enqueue queue offset in that
	// checkpoint.
	DurableEnqueueQueueOffset int64
	// FlushedSeq is the last TimerLog sequence made durable by Flush.
	FlushedSeq uint64
	// LastSeq is the last TimerLog sequence written.
	LastSeq uint64
	// SnapshotSeq is the TimerLog sequence the wheel snapshot covers.
	SnapshotSeq uint64
	// RelinkedUpToMs is the far-wheel boundary (ms).
	RelinkedUpToMs int64
}

// Checkpoint returns the current and durable positions.
func (s *Store) Checkpoint() Checkpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := Checkpoint{
		EnqueueQueueOffset: s.maxQO,
		Issued:             s.issued,
		Acked:              s.acked,
		DurableAcked:       s.durable[1],
		FlushedSeq:         s.flushedSeq,
		SnapshotSeq:        s.snapSeq,
		RelinkedUpToMs:     s.relinkedUpTo,
	}
	c.DurableEnqueueQueueOffset = s.durableQO
	if s.tl != nil && !s.closed {
		c.LastSeq = s.tl.Last()
	}
	return c
}

// Stats is a snapshot of the store's gauges and counters.
type Stats struct {
	// Pending is the number of normal timers not yet released by Due.
	Pending int64
	// PendingCancels is the number of cancels not yet released.
	PendingCancels int64
	// Loaded is the number of records held in memory, ready to release.
	Loaded int
	// Tombstones is the number of active cancels.
	Tombstones int

	// Counters since Open.

	// Added counts timers added.
	Added uint64
	// DuplicateAdds counts timers skipped as enqueue replays.
	DuplicateAdds uint64
	// Issued counts timers released by Due (delivered or cancelled).
	Issued uint64
	// Delivered counts timers acknowledged as delivered.
	Delivered uint64
	// Cancelled counts timers acknowledged as suppressed by a cancel.
	Cancelled uint64
	// CancelsActivated counts cancels that became active.
	CancelsActivated uint64
	// Relinked counts records moved from the far to the near wheel.
	Relinked uint64
	// Rolled counts records parked in the last far bucket (beyond the span).
	Rolled uint64
	// Moved counts records re-appended by compaction.
	Moved uint64
	// Rerouted counts records pointed at a relocated message (Reroute).
	Rerouted uint64
	// Corrupt counts corrupt or lost TimerLog records met.
	Corrupt uint64
	// Stalls counts Due calls held back until Ack and Flush free room.
	Stalls uint64
	// Truncated counts TimerLog segments dropped.
	Truncated uint64
	// Replayed counts records replayed on recovery.
	Replayed uint64

	// LogFirst is the first TimerLog sequence.
	LogFirst uint64
	// LogLast is the last TimerLog sequence.
	LogLast uint64
	// LogSegments is the number of TimerLog segment files.
	LogSegments int
	// LogBytes is the TimerLog size in bytes.
	LogBytes int64
}

// Stats returns the current gauges and counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statsLocked()
}

// statsLocked is Stats with mu held.
func (s *Store) statsLocked() Stats {
	st := Stats{
		Pending:          s.nearAhead.n + s.farCnt.n + s.readyCnt.n,
		PendingCancels:   s.nearAhead.nc + s.farCnt.nc + s.readyCnt.nc,
		Loaded:           s.ready.Len(),
		Tombstones:       len(s.tombs),
		Added:            s.st.added,
		DuplicateAdds:    s.st.dupAdds,
		Issued:           s.st.issued,
		Delivered:        s.st.delivered,
		Cancelled:        s.st.cancelled,
		CancelsActivated: s.st.cancels,
		Relinked:         s.st.relinked,
		Rolled:           s.st.rolled,
		Moved:            s.st.moved,
		Rerouted:         s.st.rerouted,
		Corrupt:          s.st.corrupt,
		Stalls:           s.st.stalls,
		Truncated:        s.st.truncated,
		Replayed:         s.st.replayed,
	}
	if s.tl != nil && !s.closed {
		st.LogFirst, st.LogLast = s.tl.First(), s.tl.Last()
		st.LogSegments, st.LogBytes = s.tl.Segments()
	}
	return st
}
