package timerlog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"

	"github.com/rs/zerolog"
	"github.com/tidwall/wal"
)

// DefaultSegmentSize is the default target size of a segment file.
const DefaultSegmentSize = 4 << 20

// Options configure a Log.
type Options struct {
	// Dir is the directory holding the segment files.
	Dir string
	// SegmentSize is tidwall/wal's target segment size in bytes (default
	// DefaultSegmentSize). It also bounds wal's in-memory copy of the tail.
	SegmentSize int
	// MinKeep is the last sequence known to be synced (from the caller's
	// checkpoint). Tail repair never removes it or anything before it.
	MinKeep uint64
	// NoSync skips SyncTo and the directory fsync after truncation (tests
	// and benchmarks). wal still fsyncs a segment when it starts the next.
	NoSync bool
	// Logger receives repair and error events. The zero value discards.
	Logger zerolog.Logger
	// CacheDueWithinMs, when positive, makes Append put what it writes in
	// the block cache when a record of the block is due (EffMs) within
	// this many milliseconds of being added (AddedMs): timers due soon
	// after they are sent are walked from memory when they come due, not
	// read back block by block (a cold walk of a chain spread over the log
	// costs a read per record). Blocks of timers due later are left to
	// reads.
	CacheDueWithinMs int64
}

// Log is the TimerLog: fixed-size records in tidwall/wal segments, written
// in batches without fsync (SyncTo makes them durable) and read back by
// position straight from the segment files.
//
// A Log is safe for concurrent use, but Append, TruncateFront and Close are
// expected from one writer at a time; SyncTo may run alongside Append.
type Log struct {
	opts Options
	w    *wal.Log

	mu     sync.Mutex // guards everything below
	closed bool
	err    error // sticky write error
	mirror segmentMirror
	first  uint64
	batch  wal.Batch
	buf    []byte
	rd     reader
	syncF  *os.File // tail segment handle used by SyncTo
	syncAt uint64   // first sequence of the segment syncF belongs to
	stale  int      // segments deleted behind wal's back since it was opened
}

// reopenAfter is how many deleted segments wal may still list before the
// log reopens it to drop them from its memory (a variable for tests).
var reopenAfter = 1024

func walOptions(segSize int) *wal.Options {
	return &wal.Options{
		NoSync:           true, // group commit: SyncTo
		SegmentSize:      segSize,
		LogFormat:        wal.Binary,
		SegmentCacheSize: 1,
		NoCopy:           true,
		DirPerms:         0o750,
		FilePerms:        0o640,
	}
}

// Open opens (creating if needed) the TimerLog in opts.Dir, repairing a
// torn tail first. The Repair result says what was cut.
func Open(opts Options) (*Log, Repair, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if err := os.MkdirAll(opts.Dir, 0o750); err != nil {
		return nil, Repair{}, fmt.Errorf("timerlog open %s: %w", opts.Dir, err)
	}
	// First open lets wal finish an interrupted TruncateFront/Back (its
	// .START/.END files); a torn tail makes it fail with ErrCorrupt after
	// that clean-up, which is what repairTail is for.
	if w, err := wal.Open(opts.Dir, walOptions(opts.SegmentSize)); err == nil {
		if err := w.Close(); err != nil {
			return nil, Repair{}, fmt.Errorf("timerlog open %s: %w", opts.Dir, err)
		}
	} else if !errors.Is(err, wal.ErrCorrupt) {
		return nil, Repair{}, fmt.Errorf("timerlog open %s: %w", opts.Dir, err)
	}
	rep, err := repairTail(opts.Dir, opts.MinKeep, opts.Logger)
	if err != nil {
		return nil, rep, err
	}
	w, err := wal.Open(opts.Dir, walOptions(opts.SegmentSize))
	if err != nil {
		return nil, rep, fmt.Errorf("timerlog open %s after repair: %w", opts.Dir, err)
	}
	l := &Log{opts: opts, w: w}
	if err := l.load(); err != nil {
		_ = w.Close()
		return nil, rep, err
	}
	l.rd.init(opts.Dir)
	return l, rep, nil
}

// load builds the segment mirror from the directory and checks it against
// wal's own view.
func (l *Log) load() error {
	segs, err := listSegments(l.opts.Dir)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		return fmt.Errorf("timerlog open %s: no segment after wal open: %w", l.opts.Dir, ErrCorrupt)
	}
	fi, err := os.Stat(segs[len(segs)-1].path)
	if err != nil {
		return fmt.Errorf("timerlog open: %w", err)
	}
	if fi.Size()%EntrySize != 0 {
		return fmt.Errorf("timerlog open %s: tail size %d not a multiple of %d: %w",
			segs[len(segs)-1].path, fi.Size(), EntrySize, ErrCorrupt)
	}
	l.mirror = segmentMirror{segs: segs, tailCount: uint64(fi.Size() / EntrySize),
		segSize: l.opts.SegmentSize, dir: l.opts.Dir}
	l.first = segs[0].first
	walLast, err := l.w.LastIndex()
	if err != nil {
		return fmt.Errorf("timerlog open %s: %w", l.opts.Dir, err)
	}
	if got := l.mirror.last(); walLast != got && !(walLast == 0 && got == l.first-1) {
		return fmt.Errorf("timerlog open %s: wal last index %d, segments say %d: %w",
			l.opts.Dir, walLast, got, ErrCorrupt)
	}
	return nil
}

// Dir returns the directory holding the segment files.
func (l *Log) Dir() string { return l.opts.Dir }

// First returns the first sequence still in the log (Last()+1 when empty).
func (l *Log) First() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

// Last returns the last sequence written (First()-1 when empty).
func (l *Log) Last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mirror.last()
}

// SegmentFirst returns the first sequence of the segment holding seq, or 0
// when seq is outside the log.
func (l *Log) SegmentFirst(seq uint64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq < l.first || seq > l.mirror.last()+1 {
		return 0
	}
	i := l.mirror.segmentOf(seq)
	if i < 0 {
		return 0
	}
	return l.mirror.segs[i].first
}

// SegmentBounds returns the first sequence of the segment holding seq and
// the first sequence of the next segment (math.MaxUint64 for the tail). ok
// is false when seq is outside the log.
func (l *Log) SegmentBounds(seq uint64) (first, next uint64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq < l.first || seq > l.mirror.last() {
		return 0, 0, false
	}
	i := l.mirror.segmentOf(seq)
	next = math.MaxUint64
	if i+1 < len(l.mirror.segs) {
		next = l.mirror.segs[i+1].first
	}
	return l.mirror.segs[i].first, next, true
}

// Segments returns the number of segment files and the log's size in bytes.
func (l *Log) Segments() (n int, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mirror.segs), int64(l.mirror.last()+1-l.first) * EntrySize
}

// Append writes recs as one wal batch without fsync. Each record's Seq must
// continue the log (Last()+1, Last()+2, ...). After a write error the log
// is failed: every later write returns ErrFailed.
func (l *Log) Append(recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	next := l.mirror.last() + 1
	l.batch.Clear()
	if need := len(recs) * RecordSize; cap(l.buf) < need {
		l.buf = make([]byte, need)
	}
	buf := l.buf[:len(recs)*RecordSize]
	for i := range recs {
		if recs[i].Seq != next+uint64(i) {
			return fmt.Errorf("timerlog append seq %d, want %d: %w", recs[i].Seq, next+uint64(i), ErrOutOfOrder)
		}
		b := buf[i*RecordSize : (i+1)*RecordSize]
		recs[i].Encode(b)
		l.batch.Write(recs[i].Seq, b)
	}
	if err := l.w.WriteBatch(&l.batch); err != nil {
		l.err = err
		l.opts.Logger.Error().Err(err).Uint64("seq", next).Msg("timerlog: write failed")
		return fmt.Errorf("timerlog append %d records at %d: %w", len(recs), next, err)
	}
	l.mirror.appended(len(recs))
	if l.opts.CacheDueWithinMs > 0 {
		l.cacheAppended(recs, buf)
	}
	return nil
}

// cacheAppended puts the entries of recs (encoded in buf), just written,
// in the block cache: into the cached block they continue, or into a new
// block they start when one of its records in recs is due within
// CacheDueWithinMs. l.mu must be held.
func (l *Log) cacheAppended(recs []Record, buf []byte) {
	si := l.mirror.segmentOf(recs[0].Seq)
	for i := 0; i < len(recs); {
		for si+1 < len(l.mirror.segs) && l.mirror.segs[si+1].first <= recs[i].Seq {
			si++
		}
		seg := l.mirror.segs[si]
		idx := recs[i].Seq - seg.first
		// The records of recs that share idx's block (and segment).
		end := i + int(entriesPerBlock-idx%entriesPerBlock)
		if end > len(recs) {
			end = len(recs)
		}
		if si+1 < len(l.mirror.segs) {
			end = min(end, i+int(l.mirror.segs[si+1].first-recs[i].Seq))
		}
		want := false
		for j := i; j < end && !want; j++ {
			want = recs[j].EffMs-recs[j].AddedMs <= l.opts.CacheDueWithinMs
		}
		l.rd.appended(seg, idx, buf[i*RecordSize:end*RecordSize], want)
		i = end
	}
}

func (l *Log) writable() error {
	if l.closed {
		return ErrClosed
	}
	if l.err != nil {
		return fmt.Errorf("timerlog: %w (%v)", ErrFailed, l.err)
	}
	return nil
}

// SyncTo makes every record up to seq durable: it fsyncs the segment that
// holds seq when that is still the tail (wal synced older segments when it
// cycled them), and the directory when segment files were created since the
// last call. It does not block Append while the fsync runs.
func (l *Log) SyncTo(seq uint64) error {
	if l.opts.NoSync {
		return nil
	}
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return err
	}
	var f *os.File
	i := l.mirror.segmentOf(seq)
	if i == len(l.mirror.segs)-1 && seq >= l.first {
		tail := l.mirror.segs[i]
		if l.syncF == nil || l.syncAt != tail.first {
			if l.syncF != nil {
				_ = l.syncF.Close()
			}
			var err error
			if l.syncF, err = os.OpenFile(tail.path, os.O_RDWR, 0); err != nil {
				l.syncF = nil
				l.mu.Unlock()
				return fmt.Errorf("timerlog sync open %s: %w", tail.path, err)
			}
			l.syncAt = tail.first
		}
		f = l.syncF
	}
	created := l.mirror.created
	l.mirror.created = false
	l.mu.Unlock()

	if f != nil {
		if err := f.Sync(); err != nil {
			return l.fail(fmt.Errorf("timerlog sync %s: %w", f.Name(), err))
		}
	}
	if created {
		if err := syncDir(l.opts.Dir); err != nil {
			return l.fail(err)
		}
	}
	return nil
}

// fail records a sticky error: after a failed fsync the page cache state is
// unknown, so the log refuses further writes (reopen to recover).
func (l *Log) fail(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
	l.opts.Logger.Error().Err(err).Msg("timerlog: sync failed")
	return err
}

// TruncateFront removes the segments that end before seq: afterwards the
// first sequence is the start of the segment holding seq. It never removes
// the segment being written. It returns the new first sequence.
//
// It deletes the segment files itself instead of calling
// wal.TruncateFront, which rewrites the kept segment and holds wal's lock
// (blocking appends) while it copies and fsyncs it. wal only reads a
// segment file again through wal.Read, which this package does not use, and
// lists the directory afresh on open, so its stale list of old segments is
// harmless.
func (l *Log) TruncateFront(seq uint64) (uint64, error) {
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return l.first, err
	}
	i := l.mirror.segmentOf(min(seq, l.mirror.last()))
	if i <= 0 {
		first := l.first
		l.mu.Unlock()
		return first, nil
	}
	gone := append([]segment(nil), l.mirror.segs[:i]...)
	l.rd.forget(gone)
	if l.syncF != nil && l.syncAt < l.mirror.segs[i].first {
		_ = l.syncF.Close()
		l.syncF = nil
	}
	l.mirror.segs = append([]segment(nil), l.mirror.segs[i:]...)
	l.first = l.mirror.segs[0].first
	first := l.first
	l.stale += len(gone)
	l.mu.Unlock()

	// Oldest first, so that a crash midway leaves a contiguous log.
	for _, g := range gone {
		if err := os.Remove(g.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return first, l.fail(fmt.Errorf("timerlog truncate remove %s: %w", g.path, err))
		}
	}
	if !l.opts.NoSync {
		if err := syncDir(l.opts.Dir); err != nil {
			return first, l.fail(err)
		}
	}
	return first, l.refreshWAL()
}

// refreshWAL reopens wal once it lists many deleted segments (it keeps a
// small entry per segment it has ever seen).
func (l *Log) refreshWAL() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stale < reopenAfter || l.closed || l.err != nil {
		return nil
	}
	if err := l.w.Close(); err != nil {
		l.err = err
		return fmt.Errorf("timerlog reopen wal %s: %w", l.opts.Dir, err)
	}
	w, err := wal.Open(l.opts.Dir, walOptions(l.opts.SegmentSize))
	if err != nil {
		l.err = err
		return fmt.Errorf("timerlog reopen wal %s: %w", l.opts.Dir, err)
	}
	l.w = w
	l.stale = 0
	return nil
}

// Close closes the log. Unsynced records stay in the page cache; call
// SyncTo first to make them durable.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	l.rd.close()
	if l.syncF != nil {
		_ = l.syncF.Close()
		l.syncF = nil
	}
	if err := l.w.Close(); err != nil && !errors.Is(err, wal.ErrClosed) {
		return fmt.Errorf("timerlog close %s: %w", l.opts.Dir, err)
	}
	return nil
}
