package raftstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Snapshot files (package doc).
const (
	// SnapshotDir is the directory of SnapshotStore under the store's dir.
	SnapshotDir = "raft-snapshots"
	snapMagic   = "WMQRSNP1"
	snapSuffix  = ".snap"
	snapTmp     = ".snap.tmp"
	snapTrailer = 8 // metaLen:u32 crc:u32
)

// SnapshotStore is a raft.SnapshotStore on vfs: one file per snapshot,
// written to <id>.snap.tmp, fsynced, renamed to <id>.snap, the directory
// fsynced (package doc). Open reads a whole snapshot into memory (the
// controller's state is small).
type SnapshotStore struct {
	fs     vfs.FS
	dir    string
	retain int
	log    zerolog.Logger
	mu     sync.Mutex // serializes Close's rename and reaping with List
}

var _ raft.SnapshotStore = (*SnapshotStore)(nil)

// OpenSnapshots opens the snapshot store in dir/raft-snapshots, keeping
// the newest retain (>= 1) snapshots; unfinished ones are removed.
func OpenSnapshots(dir string, retain int, o Options) (*SnapshotStore, error) {
	if retain < 1 {
		return nil, fmt.Errorf("raftstore: snapshots: retain %d, want >= 1", retain)
	}
	s := &SnapshotStore{fs: vfs.Default(o.FS), dir: filepath.Join(dir, SnapshotDir), retain: retain, log: o.Logger}
	if err := vfs.MkdirAllSynced(s.fs, s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("raftstore: snapshots: %w", err)
	}
	ents, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("raftstore: snapshots: %w", err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), snapTmp) {
			if err := s.fs.Remove(filepath.Join(s.dir, e.Name())); err != nil {
				return nil, fmt.Errorf("raftstore: snapshots: remove unfinished %s: %w", e.Name(), err)
			}
		}
	}
	return s, nil
}

// Create implements raft.SnapshotStore.
func (s *SnapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	if version != 1 {
		return nil, fmt.Errorf("raftstore: snapshot version %d not supported", version)
	}
	id := fmt.Sprintf("%d-%d-%d", term, index, time.Now().UnixMilli())
	tmp := filepath.Join(s.dir, id+snapTmp)
	f, err := s.fs.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("raftstore: create snapshot: %w", err)
	}
	k := &snapSink{s: s, f: f, tmp: tmp, meta: raft.SnapshotMeta{Version: version, ID: id, Index: index, Term: term,
		Configuration: configuration, ConfigurationIndex: configurationIndex}}
	if _, err := k.Write([]byte(snapMagic)); err != nil {
		_ = k.Cancel()
		return nil, err
	}
	k.meta.Size = 0
	return k, nil
}

// snapSink writes one snapshot file.
type snapSink struct {
	s    *SnapshotStore
	f    vfs.File
	tmp  string
	off  int64
	crc  uint32
	meta raft.SnapshotMeta
	done bool
}

// ID implements raft.SnapshotSink.
func (k *snapSink) ID() string { return k.meta.ID }

// Write implements io.Writer.
func (k *snapSink) Write(p []byte) (int, error) {
	n, err := k.f.WriteAt(p, k.off)
	k.crc = crc32.Update(k.crc, castagnoli, p[:n])
	k.off += int64(n)
	k.meta.Size += int64(n)
	if err != nil {
		return n, fmt.Errorf("raftstore: write snapshot %s: %w", k.meta.ID, err)
	}
	return n, nil
}

// Close implements raft.SnapshotSink: the snapshot is durable and listed
// when it returns nil; older ones beyond retain are removed.
func (k *snapSink) Close() error {
	if k.done {
		return nil
	}
	meta, err := json.Marshal(&k.meta)
	if err != nil {
		_ = k.Cancel()
		return fmt.Errorf("raftstore: snapshot %s meta: %w", k.meta.ID, err)
	}
	meta = binary.BigEndian.AppendUint32(meta, uint32(len(meta)))
	if _, err := k.f.WriteAt(meta, k.off); err != nil {
		_ = k.Cancel()
		return fmt.Errorf("raftstore: write snapshot %s: %w", k.meta.ID, err)
	}
	crc := crc32.Update(k.crc, castagnoli, meta)
	if _, err := k.f.WriteAt(binary.BigEndian.AppendUint32(nil, crc), k.off+int64(len(meta))); err != nil {
		_ = k.Cancel()
		return fmt.Errorf("raftstore: write snapshot %s: %w", k.meta.ID, err)
	}
	if err := k.f.Sync(); err != nil {
		_ = k.Cancel()
		return fmt.Errorf("raftstore: sync snapshot %s: %w", k.meta.ID, err)
	}
	k.done = true
	if err := k.f.Close(); err != nil {
		_ = k.s.fs.Remove(k.tmp)
		return fmt.Errorf("raftstore: close snapshot %s: %w", k.meta.ID, err)
	}
	s := k.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fs.Rename(k.tmp, filepath.Join(s.dir, k.meta.ID+snapSuffix)); err != nil {
		_ = s.fs.Remove(k.tmp)
		return fmt.Errorf("raftstore: snapshot %s: %w", k.meta.ID, err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("raftstore: snapshot %s: sync dir: %w", k.meta.ID, err)
	}
	return s.reapLocked()
}

// Cancel implements raft.SnapshotSink.
func (k *snapSink) Cancel() error {
	if k.done {
		return nil
	}
	k.done = true
	_ = k.f.Close()
	if err := k.s.fs.Remove(k.tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("raftstore: cancel snapshot %s: %w", k.meta.ID, err)
	}
	return nil
}

// reapLocked removes the snapshots beyond retain. s.mu should be held.
func (s *SnapshotStore) reapLocked() error {
	metas, err := s.listLocked()
	if err != nil {
		return err
	}
	if len(metas) <= s.retain {
		return nil
	}
	for _, m := range metas[s.retain:] {
		if err := s.fs.Remove(filepath.Join(s.dir, m.ID+snapSuffix)); err != nil {
			return fmt.Errorf("raftstore: reap snapshot %s: %w", m.ID, err)
		}
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("raftstore: reap snapshots: sync dir: %w", err)
	}
	return nil
}

// List implements raft.SnapshotStore: the newest retain snapshots, newest
// first (by term, index, id). An unreadable file is logged and skipped.
func (s *SnapshotStore) List() ([]*raft.SnapshotMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	metas, err := s.listLocked()
	if err != nil {
		return nil, err
	}
	return metas[:min(len(metas), s.retain)], nil
}

// listLocked reads every snapshot's meta, newest first. s.mu should be
// held.
func (s *SnapshotStore) listLocked() ([]*raft.SnapshotMeta, error) {
	ents, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("raftstore: list snapshots: %w", err)
	}
	var metas []*raft.SnapshotMeta
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), snapSuffix) {
			continue
		}
		m, _, err := s.read(strings.TrimSuffix(e.Name(), snapSuffix))
		if err != nil {
			s.log.Warn().Err(err).Msg("raft snapshots: skipped an unreadable snapshot")
			continue
		}
		metas = append(metas, m)
	}
	sort.Slice(metas, func(i, j int) bool {
		a, b := metas[i], metas[j]
		if a.Term != b.Term {
			return a.Term > b.Term
		}
		if a.Index != b.Index {
			return a.Index > b.Index
		}
		return a.ID > b.ID
	})
	return metas, nil
}

// read loads and checks snapshot id: its meta and its state bytes.
func (s *SnapshotStore) read(id string) (*raft.SnapshotMeta, []byte, error) {
	name := filepath.Join(s.dir, id+snapSuffix)
	b, err := vfs.ReadFile(s.fs, name)
	if err != nil {
		return nil, nil, fmt.Errorf("raftstore: snapshot: %w", err)
	}
	if len(b) < len(snapMagic)+snapTrailer || string(b[:len(snapMagic)]) != snapMagic {
		return nil, nil, fmt.Errorf("%w: %s: not a snapshot file", ErrCorrupt, name)
	}
	end := len(b) - 4
	if crc32.Checksum(b[:end], castagnoli) != binary.BigEndian.Uint32(b[end:]) {
		return nil, nil, fmt.Errorf("%w: %s: checksum mismatch", ErrCorrupt, name)
	}
	metaLen := int(binary.BigEndian.Uint32(b[end-4:]))
	metaAt := end - 4 - metaLen
	if metaAt < len(snapMagic) {
		return nil, nil, fmt.Errorf("%w: %s: meta length %d", ErrCorrupt, name, metaLen)
	}
	m := new(raft.SnapshotMeta)
	if err := json.Unmarshal(b[metaAt:end-4], m); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: meta: %w", ErrCorrupt, name, err)
	}
	data := b[len(snapMagic):metaAt]
	if int64(len(data)) != m.Size {
		return nil, nil, fmt.Errorf("%w: %s: %d state bytes, meta says %d", ErrCorrupt, name, len(data), m.Size)
	}
	return m, data, nil
}

// Open implements raft.SnapshotStore.
func (s *SnapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	m, data, err := s.read(id)
	if err != nil {
		return nil, nil, err
	}
	return m, io.NopCloser(bytes.NewReader(data)), nil
}
