package raftstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// File names under the store's directory.
const (
	// LogFile is the raft log (package doc).
	LogFile = "raft.log"
	// StableFile is the stable store (package doc).
	StableFile = "raft-stable"
	logTmp     = LogFile + ".tmp"
)

// DefaultRewriteMinBytes is Options.RewriteMinBytes when 0: below this
// size raft.log is never rewritten.
const DefaultRewriteMinBytes = 1 << 20

// Options configures Open.
type Options struct {
	// FS is the file system (vfs.OS when nil).
	FS vfs.FS
	// RewriteMinBytes: a DeleteRange rewrites raft.log when it is at least
	// this large and more than half dead (DefaultRewriteMinBytes when 0).
	RewriteMinBytes int64
	// Logger receives what recovery cut and what compaction did.
	Logger zerolog.Logger
}

// Recovery is what Open found in raft.log.
type Recovery struct {
	// Frames is how many intact frames were replayed.
	Frames int
	// TornAt is the offset of the torn tail that was cut (0: none).
	TornAt int64
	// TornBytes is how many bytes were cut there.
	TornBytes int64
}

// LogStore is a raft.LogStore over one append-only file (package doc).
type LogStore struct {
	fs         vfs.FS
	dir, path  string
	rewriteMin int64
	log        zerolog.Logger
	rec        Recovery

	mu          sync.RWMutex
	f           vfs.File             // guarded by mu
	end         int64                // size of raft.log; guarded by mu
	entries     map[uint64]*raft.Log // guarded by mu
	sizes       map[uint64]int64     // encoded size of each entry; guarded by mu
	live        int64                // sum of sizes; guarded by mu
	first, last uint64               // lowest and highest index held (0: empty); guarded by mu
	werr        error                // the first write failure: every later write returns it; guarded by mu
	closed      bool                 // guarded by mu
	buf         []byte               // encoding scratch; guarded by mu
}

var _ raft.LogStore = (*LogStore)(nil)

// OpenLog opens (creating it when missing) the raft log in dir, cutting a
// torn tail (see Recovery).
func OpenLog(dir string, o Options) (*LogStore, error) {
	fs := vfs.Default(o.FS)
	if err := vfs.MkdirAllSynced(fs, dir, 0o755); err != nil {
		return nil, fmt.Errorf("raftstore: %w", err)
	}
	s := &LogStore{
		fs: fs, dir: dir, path: filepath.Join(dir, LogFile), log: o.Logger,
		rewriteMin: o.RewriteMinBytes,
		entries:    map[uint64]*raft.Log{}, sizes: map[uint64]int64{},
	}
	if s.rewriteMin <= 0 {
		s.rewriteMin = DefaultRewriteMinBytes
	}
	// A rewrite that did not reach its rename leaves raft.log.tmp: the old
	// file is whole.
	if err := fs.Remove(filepath.Join(dir, logTmp)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("raftstore: remove stale %s: %w", logTmp, err)
	}
	buf, err := vfs.ReadFile(fs, s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		buf = nil
	case err != nil:
		return nil, fmt.Errorf("raftstore: %w", err)
	}
	if len(buf) < len(logMagic) && isPrefixOrZero(buf, logMagic) {
		// New, or its creation did not survive: (re)write the magic.
		if err := s.create(); err != nil {
			return nil, err
		}
		return s, nil
	}
	if string(buf[:len(logMagic)]) != logMagic {
		return nil, fmt.Errorf("%w: %s: not a raft log (magic %q)", ErrCorrupt, s.path, buf[:min(len(buf), len(logMagic))])
	}
	res, err := scanLog(s.path, buf)
	if err != nil {
		return nil, err
	}
	for _, o := range res.ops {
		s.applyLocked(o)
	}
	s.rec = Recovery{Frames: len(res.ops)}
	if s.f, err = fs.OpenFile(s.path, os.O_RDWR, 0); err != nil {
		return nil, fmt.Errorf("raftstore: open %s: %w", s.path, err)
	}
	s.end = res.end
	if res.torn > 0 {
		s.rec.TornAt, s.rec.TornBytes = res.end, res.torn
		if err := s.f.Truncate(res.end); err != nil {
			_ = s.f.Close()
			return nil, fmt.Errorf("raftstore: cut the torn tail of %s at %d: %w", s.path, res.end, err)
		}
		if err := s.f.Sync(); err != nil {
			_ = s.f.Close()
			return nil, fmt.Errorf("raftstore: cut the torn tail of %s at %d: sync: %w", s.path, res.end, err)
		}
		s.log.Warn().Str("file", s.path).Int64("offset", res.end).Int64("bytes", res.torn).
			Msg("raft log: cut a torn tail (a write the power cut interrupted)")
	}
	return s, nil
}

// isPrefixOrZero reports whether b is a prefix of magic or all zeros.
func isPrefixOrZero(b []byte, magic string) bool {
	if string(b) == magic[:len(b)] {
		return true
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// create writes a new raft.log holding only the magic, durably.
func (s *LogStore) create() error {
	f, err := s.fs.OpenFile(s.path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("raftstore: create %s: %w", s.path, err)
	}
	if _, err := f.WriteAt([]byte(logMagic), 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("raftstore: create %s: %w", s.path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("raftstore: create %s: sync: %w", s.path, err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		_ = f.Close()
		return fmt.Errorf("raftstore: create %s: sync dir: %w", s.path, err)
	}
	s.f, s.end = f, int64(len(logMagic))
	return nil
}

// Recovery returns what Open found.
func (s *LogStore) Recovery() Recovery { return s.rec }

// applyLocked applies one operation to the in-memory log. Lock should be
// held (or s not yet shared).
func (s *LogStore) applyLocked(o op) {
	if o.del {
		s.deleteLocked(o.lo, o.hi)
		return
	}
	for _, l := range o.entries {
		size := int64(entryFixed + len(l.Data) + len(l.Extensions))
		s.live += size - s.sizes[l.Index]
		s.entries[l.Index], s.sizes[l.Index] = l, size
		if s.first == 0 || l.Index < s.first {
			s.first = l.Index
		}
		if l.Index > s.last {
			s.last = l.Index
		}
	}
}

// deleteLocked removes the entries in [lo, hi]. Lock should be held.
func (s *LogStore) deleteLocked(lo, hi uint64) {
	if lo > hi || len(s.entries) == 0 {
		return
	}
	if hi-lo < uint64(len(s.entries)) {
		for i := lo; ; i++ {
			s.dropLocked(i)
			if i == hi {
				break
			}
		}
	} else {
		for i := range s.entries {
			if i >= lo && i <= hi {
				s.dropLocked(i)
			}
		}
	}
	if len(s.entries) == 0 {
		s.first, s.last = 0, 0
		return
	}
	if lo <= s.first || hi >= s.last {
		s.first, s.last = 0, 0
		for i := range s.entries {
			if s.first == 0 || i < s.first {
				s.first = i
			}
			s.last = max(s.last, i)
		}
	}
}

func (s *LogStore) dropLocked(i uint64) {
	if _, ok := s.entries[i]; ok {
		s.live -= s.sizes[i]
		delete(s.entries, i)
		delete(s.sizes, i)
	}
}

// FirstIndex implements raft.LogStore: the lowest index held (0: empty).
func (s *LogStore) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.first, nil
}

// LastIndex implements raft.LogStore: the highest index held (0: empty).
func (s *LogStore) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.last, nil
}

// GetLog implements raft.LogStore; raft.ErrLogNotFound when index is not
// held.
func (s *LogStore) GetLog(index uint64, log *raft.Log) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	l, ok := s.entries[index]
	if !ok {
		return raft.ErrLogNotFound
	}
	*log = *l
	return nil
}

// StoreLog implements raft.LogStore.
func (s *LogStore) StoreLog(log *raft.Log) error { return s.StoreLogs([]*raft.Log{log}) }

// StoreLogs implements raft.LogStore: the entries are durable (one frame,
// fsynced) when it returns nil. An entry replaces one of the same index.
func (s *LogStore) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	buf, err := appendEntriesFrame(s.buf[:0], logs)
	if err != nil {
		return err
	}
	s.buf = buf
	if err := s.writeLocked(buf); err != nil {
		return err
	}
	cp := make([]*raft.Log, len(logs))
	for i, l := range logs {
		c := *l
		c.Data = append([]byte(nil), l.Data...)
		c.Extensions = append([]byte(nil), l.Extensions...)
		cp[i] = &c
	}
	s.applyLocked(op{entries: cp})
	return nil
}

// DeleteRange implements raft.LogStore: entries lo..hi (inclusive) are
// removed, durably; raft.log is rewritten when mostly dead.
func (s *LogStore) DeleteRange(lo, hi uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = appendDeleteFrame(s.buf[:0], lo, hi)
	if err := s.writeLocked(s.buf); err != nil {
		return err
	}
	s.deleteLocked(lo, hi)
	if s.end >= s.rewriteMin && s.end-int64(len(logMagic)) > 2*s.live {
		return s.rewriteLocked()
	}
	return nil
}

// writeLocked appends frame to raft.log and fsyncs. Lock should be held.
func (s *LogStore) writeLocked(frame []byte) error {
	switch {
	case s.closed:
		return fmt.Errorf("raftstore: %s: closed", s.path)
	case s.werr != nil:
		return s.werr
	}
	if _, err := s.f.WriteAt(frame, s.end); err != nil {
		s.werr = fmt.Errorf("raftstore: write %s at %d: %w", s.path, s.end, err)
		return s.werr
	}
	if err := s.f.Sync(); err != nil {
		s.werr = fmt.Errorf("raftstore: sync %s: %w", s.path, err)
		return s.werr
	}
	s.end += int64(len(frame))
	return nil
}

// Close closes raft.log; later calls do nothing.
func (s *LogStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("raftstore: close %s: %w", s.path, err)
	}
	return nil
}
