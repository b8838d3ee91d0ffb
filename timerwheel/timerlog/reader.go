package timerlog

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Reads go straight to the segment files with pread: entry seq of a
// segment starting at first sits at byte (seq-first)*EntrySize. (Reading
// as tidwall/wal does would load a whole segment into memory per cache
// miss, and slot chains jump between segments.) Blocks of entriesPerBlock entries are cached, so
// walking a chain whose records were appended together costs one read per
// block, not per record.
const (
	entriesPerBlock = 46 // 4,094 bytes: about a page
	blockBytes      = entriesPerBlock * EntrySize
	cachedBlocks    = 4096 // 16 MiB, filled by reads (due timers' chains) and by appends of timers due soon (Options.CacheDueWithinMs)
	openFiles       = 64
	denseBlocks     = 16 // blocks ReadDense reads at once (64 KiB)
	// DenseRunEntries is how many entries one ReadDense miss reads.
	DenseRunEntries = denseBlocks * entriesPerBlock
)

// denseCacheBytes is the largest log whose ReadDense runs are cached (half
// the block cache; a variable for tests).
var denseCacheBytes uint64 = cachedBlocks * blockBytes / 2

type blockKey struct {
	seg   uint64 // segment first sequence
	block uint64
}

type block struct {
	key  blockKey
	data []byte // valid bytes read so far (the tail block grows)
}

// reader is the positional reader and its caches. Guarded by Log.mu.
type reader struct {
	fs     vfs.FS
	dir    string
	blocks map[blockKey]*list.Element
	lru    list.List // of *block, most recent first
	files  map[uint64]*list.Element
	flru   list.List // of *openFile
	free   [][]byte
	// run holds the entries of segment runSeg from index runFirst that
	// ReadDense read last.
	run      []byte
	runSeg   uint64
	runFirst uint64
}

type openFile struct {
	first uint64
	f     vfs.File
}

func (r *reader) init(fs vfs.FS, dir string) {
	r.fs = fs
	r.dir = dir
	r.blocks = make(map[blockKey]*list.Element)
	r.files = make(map[uint64]*list.Element)
}

func (r *reader) file(seg segment) (vfs.File, error) {
	if e, ok := r.files[seg.first]; ok {
		r.flru.MoveToFront(e)
		return e.Value.(*openFile).f, nil
	}
	f, err := r.fs.OpenFile(seg.path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("timerlog read open %s: %w", seg.path, err)
	}
	r.files[seg.first] = r.flru.PushFront(&openFile{first: seg.first, f: f})
	if r.flru.Len() > openFiles {
		old := r.flru.Remove(r.flru.Back()).(*openFile)
		delete(r.files, old.first)
		_ = old.f.Close()
	}
	return f, nil
}

// entry returns the EntrySize bytes of entry idx of seg, reading its block
// when it is not cached or not yet read that far.
func (r *reader) entry(seg segment, idx uint64) ([]byte, error) {
	key := blockKey{seg: seg.first, block: idx / entriesPerBlock}
	off := int((idx % entriesPerBlock) * EntrySize)
	b := r.cached(key)
	if b == nil || len(b.data) < off+EntrySize {
		f, err := r.file(seg)
		if err != nil {
			return nil, err
		}
		if b == nil {
			b = r.insert(key)
		}
		n, err := f.ReadAt(b.data[:blockBytes], int64(key.block*blockBytes))
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("timerlog read %s@%d: %w", seg.path, key.block*blockBytes, err)
		}
		b.data = b.data[:n]
		if len(b.data) < off+EntrySize {
			return nil, fmt.Errorf("timerlog read %s entry %d: short file: %w", seg.path, idx, ErrCorrupt)
		}
	}
	return b.data[off : off+EntrySize], nil
}

// appended records entries just written from entry idx of seg on, all in
// idx's block: entries holds them (EntrySize bytes each). They
// extend the cached block they continue, or start a new cached block when
// idx is the block's first entry and create is set. A block that is not
// cached, or whose cached part ends before idx, is left to entry (which
// reads it again).
func (r *reader) appended(seg segment, idx uint64, entries []byte, create bool) {
	key := blockKey{seg: seg.first, block: idx / entriesPerBlock}
	off := int((idx % entriesPerBlock) * EntrySize)
	b := r.cached(key)
	switch {
	case b == nil && (off != 0 || !create):
		return
	case b == nil:
		b = r.insert(key)
		b.data = b.data[:0]
	case len(b.data) < off:
		return
	}
	if len(b.data) < off+len(entries) {
		b.data = b.data[:off+len(entries)]
	}
	copy(b.data[off:], entries)
}

// cached returns the cached block key (nil: not cached), marking it used.
func (r *reader) cached(key blockKey) *block {
	if e, ok := r.blocks[key]; ok {
		r.lru.MoveToFront(e)
		return e.Value.(*block)
	}
	return nil
}

// insert caches a new block for key, evicting the least recently used
// block when the cache is full. Its data has room for a whole block.
func (r *reader) insert(key blockKey) *block {
	b := &block{key: key}
	if len(r.free) > 0 {
		b.data, r.free = r.free[len(r.free)-1], r.free[:len(r.free)-1]
	} else {
		b.data = make([]byte, blockBytes)
	}
	r.blocks[key] = r.lru.PushFront(b)
	if r.lru.Len() > cachedBlocks {
		old := r.lru.Remove(r.lru.Back()).(*block)
		delete(r.blocks, old.key)
		r.free = append(r.free, old.data[:cap(old.data)])
	}
	return b
}

// entryDense is entry for walks going down the log. A cached block is
// served from the cache; on a miss it reads the denseBlocks blocks that end
// with idx's in one read into the run buffer, so the entries the walk needs
// next, below idx, are in memory. When cacheRuns is set (the log is small
// enough for the block cache to hold) the run's blocks are cached too, so
// that the next walk over the same stretch reads nothing; a log larger than
// the cache would only push blocks out before they are met again.
func (r *reader) entryDense(seg segment, idx uint64, cacheRuns bool) ([]byte, error) {
	key := blockKey{seg: seg.first, block: idx / entriesPerBlock}
	off := int((idx % entriesPerBlock) * EntrySize)
	if b := r.cached(key); b != nil && len(b.data) >= off+EntrySize {
		return b.data[off : off+EntrySize], nil
	}
	if seg.first == r.runSeg && idx >= r.runFirst && (idx-r.runFirst+1)*EntrySize <= uint64(len(r.run)) {
		at := (idx - r.runFirst) * EntrySize
		return r.run[at : at+EntrySize], nil
	}
	f, err := r.file(seg)
	if err != nil {
		return nil, err
	}
	first := key.block - min(key.block, denseBlocks-1)
	if cap(r.run) < denseBlocks*blockBytes {
		r.run = make([]byte, denseBlocks*blockBytes)
	}
	buf := r.run[:(key.block-first+1)*blockBytes]
	n, err := f.ReadAt(buf, int64(first*blockBytes))
	if err != nil && !errors.Is(err, io.EOF) {
		r.run = r.run[:0]
		return nil, fmt.Errorf("timerlog read %s@%d: %w", seg.path, first*blockBytes, err)
	}
	r.run, r.runSeg, r.runFirst = buf[:n], seg.first, first*entriesPerBlock
	if (idx-r.runFirst+1)*EntrySize > uint64(n) {
		return nil, fmt.Errorf("timerlog read %s entry %d: short file: %w", seg.path, idx, ErrCorrupt)
	}
	if cacheRuns {
		for no := first; no <= key.block; no++ {
			at := int((no - first) * blockBytes)
			if at >= n {
				break
			}
			data := r.run[at:min(n, at+blockBytes)]
			k := blockKey{seg: seg.first, block: no}
			b := r.cached(k)
			if b == nil {
				b = r.insert(k)
			} else if len(b.data) >= len(data) {
				continue
			}
			b.data = b.data[:cap(b.data)][:copy(b.data[:cap(b.data)], data)]
		}
	}
	at := (idx - r.runFirst) * EntrySize
	return r.run[at : at+EntrySize], nil
}

// forget drops cached blocks and handles of segments that were removed or
// rewritten.
func (r *reader) forget(segs []segment) {
	for _, s := range segs {
		if s.first == r.runSeg {
			r.run = r.run[:0]
		}
		if e, ok := r.files[s.first]; ok {
			_ = r.flru.Remove(e).(*openFile).f.Close()
			delete(r.files, s.first)
		}
	}
	for k, e := range r.blocks {
		for _, s := range segs {
			if k.seg == s.first {
				r.lru.Remove(e)
				delete(r.blocks, k)
				break
			}
		}
	}
}

func (r *reader) close() {
	r.run = r.run[:0]
	for _, e := range r.files {
		_ = e.Value.(*openFile).f.Close()
	}
	r.files = map[uint64]*list.Element{}
	r.flru.Init()
	r.blocks = map[blockKey]*list.Element{}
	r.lru.Init()
}

// Read returns the record with sequence seq. A record that fails
// validation, or whose stored sequence differs from seq, returns an error
// wrapping ErrCorrupt.
func (l *Log) Read(seq uint64) (Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seg, err := l.locate(seq)
	if err != nil {
		return Record{}, err
	}
	e, err := l.rd.entry(seg, seq-seg.first)
	if err != nil {
		return Record{}, err
	}
	return decodeEntry(e, seq)
}

// locate returns the segment that holds seq, or why it cannot be read
// (closed, out of range). l.mu must be held.
func (l *Log) locate(seq uint64) (segment, error) {
	if l.closed {
		return segment{}, ErrClosed
	}
	if seq < l.first || seq > l.mirror.last() {
		return segment{}, fmt.Errorf("timerlog read %d (log %d..%d): %w", seq, l.first, l.mirror.last(), ErrOutOfRange)
	}
	return l.mirror.segs[l.mirror.segmentOf(seq)], nil
}

// ReadDense is Read for walks that go down the log and need most of the
// entries they pass (several slot chains walked together): a cache miss
// reads the 64 KiB of entries that end at seq in one read (and caches them
// when the whole log fits in half the block cache).
func (l *Log) ReadDense(seq uint64) (Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seg, err := l.locate(seq)
	if err != nil {
		return Record{}, err
	}
	cacheRuns := (l.mirror.last()-l.first+1)*EntrySize <= denseCacheBytes
	e, err := l.rd.entryDense(seg, seq-seg.first, cacheRuns)
	if err != nil {
		return Record{}, err
	}
	return decodeEntry(e, seq)
}

func decodeEntry(e []byte, seq uint64) (Record, error) {
	if e[0] != RecordSize {
		return Record{}, fmt.Errorf("timerlog entry %d: length prefix %d: %w", seq, e[0], ErrCorrupt)
	}
	rec, err := Decode(e[1:])
	if err != nil {
		return Record{}, fmt.Errorf("timerlog entry %d: %w", seq, err)
	}
	if rec.Seq != seq {
		return Record{}, fmt.Errorf("timerlog entry %d: holds seq %d: %w", seq, rec.Seq, ErrCorrupt)
	}
	return rec, nil
}

// Scan calls fn for every sequence from from to the current last one, in
// order, reading sequentially in large chunks. A record that fails
// validation is passed with a non-nil error wrapping ErrCorrupt (and a zero
// Record); fn decides whether to go on. Scan stops at the first error fn
// returns. Do not Append from fn.
func (l *Log) Scan(from uint64, fn func(seq uint64, r Record, err error) error) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	from = max(from, l.first)
	last := l.mirror.last()
	segs := append([]segment(nil), l.mirror.segs...)
	fs := l.fs
	l.mu.Unlock()

	buf := make([]byte, 256*blockBytes)
	for seq := from; seq <= last; {
		i := segmentIndex(segs, seq)
		seg := segs[i]
		end := last
		if i+1 < len(segs) {
			end = min(end, segs[i+1].first-1)
		}
		f, err := fs.OpenFile(seg.path, os.O_RDONLY, 0)
		if err != nil {
			return fmt.Errorf("timerlog scan open %s: %w", seg.path, err)
		}
		for seq <= end {
			n := min(end-seq+1, uint64(len(buf)/EntrySize))
			chunk := buf[:n*EntrySize]
			if _, err := f.ReadAt(chunk, int64((seq-seg.first)*EntrySize)); err != nil {
				_ = f.Close()
				return fmt.Errorf("timerlog scan %s at %d: %w", seg.path, seq, err)
			}
			for k := uint64(0); k < n; k++ {
				rec, derr := decodeEntry(chunk[k*EntrySize:(k+1)*EntrySize], seq)
				if err := fn(seq, rec, derr); err != nil {
					_ = f.Close()
					return err
				}
				seq++
			}
		}
		_ = f.Close()
	}
	return nil
}

func segmentIndex(segs []segment, seq uint64) int {
	m := segmentMirror{segs: segs}
	return m.segmentOf(seq)
}
