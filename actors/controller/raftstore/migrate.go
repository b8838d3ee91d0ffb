package raftstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/rs/zerolog"
	bbolt "go.etcd.io/bbolt"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Names of the raft-boltdb store an earlier version kept in the directory.
const (
	// BoltFile is raft-boltdb's file (log and stable store in one bbolt DB).
	BoltFile = "raft.db"
	// FileSnapshotDir is hashicorp's FileSnapshotStore directory an
	// earlier version kept its snapshots in (left in place by MigrateBolt).
	FileSnapshotDir = "snapshots"
	// BoltMigratedFile is where MigrateBolt moves BoltFile once converted
	// (kept as a backup; an operator may delete it).
	BoltMigratedFile = "raft.db.migrated"
)

// boltOpenTimeout bounds the wait for raft.db's file lock.
const boltOpenTimeout = 5 * time.Second

// stableKeys are hashicorp/raft's stable-store keys (raft.go, v1.8.0).
var stableKeys = []string{"CurrentTerm", "LastVoteTerm", "LastVoteCand"}

// MigrateBolt converts a raft.db left in dir by an earlier version (read
// through the OS file system: bbolt cannot use vfs) into raft.log and
// raft-stable on fs, once: every log entry and the stable keys are copied
// and fsynced, so is the newest snapshot of the FileSnapshotStore in
// dir/snapshots (into raft-snapshots; the old directory is left), then raft.db is renamed to raft.db.migrated and dir fsynced.
// While raft.db exists it is the truth: new files found next to it are
// what an interrupted conversion left, and are replaced. It reports
// whether it converted; no raft.db is no work and no error.
func MigrateBolt(dir string, fs vfs.FS, log zerolog.Logger) (bool, error) {
	fs = vfs.Default(fs)
	src := filepath.Join(dir, BoltFile)
	st, err := os.Stat(src)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("raftstore: migrate: %w", err)
	}
	if err := fs.RemoveAll(filepath.Join(dir, SnapshotDir)); err != nil {
		return false, fmt.Errorf("raftstore: migrate: %w", err)
	}
	for _, name := range []string{LogFile, logTmp, StableFile} {
		p := filepath.Join(dir, name)
		if err := fs.Remove(p); err == nil {
			log.Warn().Str("file", p).Msg("raft store migration: removed what an interrupted conversion left (raft.db is still the truth)")
		} else if !errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("raftstore: migrate: %w", err)
		}
	}
	if st.Size() == 0 {
		// raft-boltdb was cut before it wrote anything: nothing to keep.
		return true, moveAside(dir, src, log, 0, 0, 0, "")
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: src,
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: boltOpenTimeout}})
	if err != nil {
		return false, fmt.Errorf("raftstore: migrate: open %s: %w", src, err)
	}
	defer bolt.Close()
	n, first, last, err := copyBolt(dir, fs, bolt)
	if err != nil {
		return false, fmt.Errorf("raftstore: migrate %s: %w", src, err)
	}
	if err := bolt.Close(); err != nil {
		return false, fmt.Errorf("raftstore: migrate: close %s: %w", src, err)
	}
	snap, err := copySnapshot(dir, fs)
	if err != nil {
		return false, fmt.Errorf("raftstore: migrate: %w", err)
	}
	return true, moveAside(dir, src, log, n, first, last, snap)
}

// moveAside renames the converted raft.db to raft.db.migrated, durably,
// and logs what the conversion copied.
func moveAside(dir, src string, log zerolog.Logger, n int, first, last uint64, snap string) error {
	dst := filepath.Join(dir, BoltMigratedFile)
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("raftstore: migrate: %w", err)
	}
	if err := (vfs.OS{}).SyncDir(dir); err != nil {
		return fmt.Errorf("raftstore: migrate: sync %s: %w", dir, err)
	}
	log.Info().Str("from", src).Str("kept_as", dst).Int("entries", n).Uint64("first", first).Uint64("last", last).Str("snapshot", snap).
		Msg("raft store migration: converted raft-boltdb's raft.db to raft.log + raft-stable")
	return nil
}

// copyBolt copies every entry and stable key of bolt into new stores in
// dir, durably.
func copyBolt(dir string, fs vfs.FS, bolt *raftboltdb.BoltStore) (n int, first, last uint64, err error) {
	l, err := OpenLog(dir, Options{FS: fs})
	if err != nil {
		return 0, 0, 0, err
	}
	defer l.Close()
	if first, err = bolt.FirstIndex(); err != nil {
		return 0, 0, 0, fmt.Errorf("first index: %w", err)
	}
	if last, err = bolt.LastIndex(); err != nil {
		return 0, 0, 0, fmt.Errorf("last index: %w", err)
	}
	var batch []*raft.Log
	for i := first; first != 0 && i <= last; i++ {
		e := new(raft.Log)
		if err := bolt.GetLog(i, e); errors.Is(err, raft.ErrLogNotFound) {
			continue
		} else if err != nil {
			return 0, 0, 0, fmt.Errorf("entry %d: %w", i, err)
		}
		batch = append(batch, e)
		if len(batch) == rewriteChunk || i == last {
			if err := l.StoreLogs(batch); err != nil {
				return 0, 0, 0, err
			}
			n += len(batch)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if err := l.StoreLogs(batch); err != nil {
			return 0, 0, 0, err
		}
		n += len(batch)
	}
	s, err := OpenStable(dir, fs)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, k := range stableKeys {
		v, err := bolt.Get([]byte(k))
		if err != nil && err.Error() == "not found" {
			continue
		} else if err != nil {
			return 0, 0, 0, fmt.Errorf("stable key %s: %w", k, err)
		}
		if err := s.Set([]byte(k), v); err != nil {
			return 0, 0, 0, err
		}
	}
	return n, first, last, l.Close()
}

// copySnapshot copies the newest snapshot of the FileSnapshotStore in
// dir/snapshots (OS file system) into a SnapshotStore on fs, and returns
// its id ("" when there is none).
func copySnapshot(dir string, fs vfs.FS) (string, error) {
	old := filepath.Join(dir, FileSnapshotDir)
	if _, err := os.Stat(old); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	fss, err := raft.NewFileSnapshotStoreWithLogger(old, 1, hclog.NewNullLogger())
	if err != nil {
		return "", fmt.Errorf("open %s: %w", old, err)
	}
	list, err := fss.List()
	if err != nil || len(list) == 0 {
		return "", err
	}
	meta, rc, err := fss.Open(list[0].ID)
	if err != nil {
		return "", fmt.Errorf("open snapshot %s: %w", list[0].ID, err)
	}
	defer rc.Close()
	snaps, err := OpenSnapshots(dir, 1, Options{FS: fs})
	if err != nil {
		return "", err
	}
	sink, err := snaps.Create(meta.Version, meta.Index, meta.Term, meta.Configuration, meta.ConfigurationIndex, nil)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(sink, rc); err != nil {
		_ = sink.Cancel()
		return "", fmt.Errorf("copy snapshot %s: %w", meta.ID, err)
	}
	if err := sink.Close(); err != nil {
		return "", err
	}
	return meta.ID, nil
}
