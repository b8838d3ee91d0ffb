package raftstore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/raft"
)

// rewriteLocked replaces raft.log by a file holding only the live entries:
// raft.log.tmp is written and fsynced, renamed over raft.log, and the
// directory fsynced. A failure keeps the store from writing again (the
// on-disk state is either file, both replaying to the same entries; the
// next Open sorts it out). Lock should be held.
func (s *LogStore) rewriteLocked() error {
	tmp := filepath.Join(s.dir, logTmp)
	before := s.end
	fail := func(err error) error {
		s.werr = fmt.Errorf("raftstore: rewrite %s: %w", s.path, err)
		return s.werr
	}
	idx := make([]uint64, 0, len(s.entries))
	for i := range s.entries {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	buf := []byte(logMagic)
	for len(idx) > 0 {
		n := min(len(idx), rewriteChunk)
		batch := make([]*raft.Log, n)
		for i, j := range idx[:n] {
			batch[i] = s.entries[j]
		}
		var err error
		if buf, err = appendEntriesFrame(buf, batch); err != nil {
			return fail(err)
		}
		idx = idx[n:]
	}
	f, err := s.fs.OpenFile(tmp, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return fail(err)
	}
	if _, err := f.WriteAt(buf, 0); err != nil {
		_ = f.Close()
		_ = s.fs.Remove(tmp)
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		_ = s.fs.Remove(tmp)
		return fail(fmt.Errorf("sync %s: %w", tmp, err))
	}
	if err := s.fs.Rename(tmp, s.path); err != nil {
		_ = f.Close()
		_ = s.fs.Remove(tmp)
		return fail(err)
	}
	old := s.f
	s.f, s.end = f, int64(len(buf))
	_ = old.Close()
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fail(fmt.Errorf("sync dir: %w", err))
	}
	s.log.Info().Str("file", s.path).Int64("before", before).Int64("after", s.end).Int("entries", len(s.entries)).
		Msg("raft log: rewrote the live entries")
	return nil
}
