package timerlog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// DefaultSegmentSize is the default target size of a segment file.
const DefaultSegmentSize = 4 << 20

// Options configure a Log.
type Options struct {
	// Dir is the directory holding the segment files.
	Dir string
	// FS is the file system every read and write goes through (nil:
	// vfs.OS{}).
	FS vfs.FS
	// SegmentSize is the target segment size in bytes (default
	// DefaultSegmentSize), with tidwall/wal's meaning: a segment is ended
	// after the entry that brings it to SegmentSize bytes or more.
	SegmentSize int
	// MinKeep is the last sequence known to be synced (from the caller's
	// checkpoint). Tail repair never removes it or anything before it.
	MinKeep uint64
	// NoSync skips every fsync after Open: SyncTo, the fsync of a segment
	// when the next one starts, and the directory fsync after truncation
	// (tests and benchmarks).
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

// Log is the TimerLog: fixed-size records in segment files of
// tidwall/wal's format, written in batches without fsync (SyncTo makes
// them durable) and read back by position straight from the segment files,
// all through Options.FS.
//
// A Log is safe for concurrent use, but Append, TruncateFront and Close are
// expected from one writer at a time; SyncTo may run alongside Append.
type Log struct {
	opts Options
	fs   vfs.FS

	syncMu sync.Mutex // one SyncTo at a time (its directory fsync covers the others)

	mu     sync.Mutex // guards everything below
	closed bool
	err    error // sticky write error
	mirror segmentMirror
	first  uint64
	tail   *segFile // the tail segment, open for writing
	buf    []byte
	rd     reader
}

// Open opens (creating if needed) the TimerLog in opts.Dir, repairing a
// torn tail first. The Repair result says what was cut.
func Open(opts Options) (*Log, Repair, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	fs := vfs.Default(opts.FS)
	opts.FS = fs
	if err := vfs.MkdirAllSynced(fs, opts.Dir, dirPerm); err != nil {
		return nil, Repair{}, fmt.Errorf("timerlog open %s: %w", opts.Dir, err)
	}
	// Finish what an older version's wal.TruncateFront left undone.
	changed, err := finishWALTruncate(fs, opts.Dir)
	if err != nil {
		return nil, Repair{}, err
	}
	rep, err := repairTail(fs, opts.Dir, opts.MinKeep, opts.Logger)
	if err != nil {
		return nil, rep, err
	}
	l := &Log{opts: opts, fs: fs}
	created, err := l.load()
	if err != nil {
		return nil, rep, err
	}
	if changed || created {
		if err := syncDir(fs, opts.Dir); err != nil {
			_ = l.tail.release()
			return nil, rep, err
		}
	}
	l.rd.init(fs, opts.Dir)
	return l, rep, nil
}

// load builds the segment mirror from the directory and opens the tail for
// writing, creating the first segment (sequence 1) in an empty directory.
func (l *Log) load() (created bool, err error) {
	segs, err := listSegments(l.fs, l.opts.Dir)
	if err != nil {
		return false, err
	}
	flag := os.O_RDWR
	if len(segs) == 0 {
		segs = []segment{{first: 1, path: filepath.Join(l.opts.Dir, segmentName(1))}}
		flag, created = os.O_CREATE|os.O_RDWR|os.O_TRUNC, true
	}
	tail := segs[len(segs)-1]
	if err := l.openTail(tail, flag); err != nil {
		return false, err
	}
	size, err := l.tail.f.Size()
	if err == nil && size%EntrySize != 0 {
		err = fmt.Errorf("tail size %d not a multiple of %d: %w", size, EntrySize, ErrCorrupt)
	}
	if err != nil {
		_ = l.tail.release()
		return false, fmt.Errorf("timerlog open %s: %w", tail.path, err)
	}
	l.mirror = segmentMirror{segs: segs, tailCount: uint64(size / EntrySize),
		segSize: l.opts.SegmentSize, dir: l.opts.Dir}
	l.first = segs[0].first
	return created, nil
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

// Append writes recs as one batch without fsync. Each record's Seq must
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
	if need := len(recs) * EntrySize; cap(l.buf) < need {
		l.buf = make([]byte, need)
	}
	buf := l.buf[:len(recs)*EntrySize]
	for i := range recs {
		if recs[i].Seq != next+uint64(i) {
			return fmt.Errorf("timerlog append seq %d, want %d: %w", recs[i].Seq, next+uint64(i), ErrOutOfOrder)
		}
		e := buf[i*EntrySize : (i+1)*EntrySize]
		e[0] = RecordSize // tidwall/wal's uvarint length
		recs[i].Encode(e[1:])
	}
	if err := l.write(buf, len(recs)); err != nil {
		l.err = err
		l.opts.Logger.Error().Err(err).Uint64("seq", next).Msg("timerlog: write failed")
		return fmt.Errorf("timerlog append %d records at %d: %w", len(recs), next, err)
	}
	if l.opts.CacheDueWithinMs > 0 {
		l.cacheAppended(recs, buf)
	}
	return nil
}

// cacheAppended puts the entries of recs (in buf), just written,
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
		l.rd.appended(seg, idx, buf[i*EntrySize:end*EntrySize], want)
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
// holds seq when that is still the tail (older segments were fsynced when
// the next one started), and the directory when segment files were created
// since the last call, so that no record is reported durable while its
// file's directory entry is not. It does not block Append while the fsyncs
// run.
func (l *Log) SyncTo(seq uint64) error {
	if l.opts.NoSync {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return err
	}
	var f *segFile
	if i := l.mirror.segmentOf(seq); i == len(l.mirror.segs)-1 && seq >= l.first && l.tail != nil {
		f = l.tail
		f.refs++
	}
	created := l.mirror.created
	l.mirror.created = false
	l.mu.Unlock()

	var err error
	if f != nil {
		if err = f.f.Sync(); err != nil {
			err = fmt.Errorf("timerlog sync %s: %w", f.path, err)
		}
		l.mu.Lock()
		rerr := f.release()
		l.mu.Unlock()
		if err == nil && rerr != nil {
			err = rerr
		}
	}
	if err == nil && created {
		err = syncDir(l.fs, l.opts.Dir)
	}
	if err != nil {
		return l.fail(err)
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
// the segment being written. It deletes whole files, oldest first, and
// fsyncs the directory; it does not block appends while it does. It returns
// the new first sequence.
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
	l.mirror.segs = append([]segment(nil), l.mirror.segs[i:]...)
	l.first = l.mirror.segs[0].first
	first := l.first
	l.mu.Unlock()

	// Oldest first, so that a crash midway leaves a contiguous log.
	for _, g := range gone {
		if err := l.fs.Remove(g.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return first, l.fail(fmt.Errorf("timerlog truncate remove %s: %w", g.path, err))
		}
	}
	if !l.opts.NoSync {
		if err := syncDir(l.fs, l.opts.Dir); err != nil {
			return first, l.fail(err)
		}
	}
	return first, nil
}

// Close closes the log. It does not fsync: unsynced records stay in the
// page cache (and are lost by a crash); call SyncTo first to make them
// durable.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	l.rd.close()
	if l.tail == nil {
		return nil
	}
	err := l.tail.release()
	l.tail = nil
	if err != nil {
		return fmt.Errorf("timerlog close %s: %w", l.opts.Dir, err)
	}
	return nil
}
