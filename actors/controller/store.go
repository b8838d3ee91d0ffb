package controller

import (
	"fmt"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller/raftstore"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// snapshotRetain is how many raft snapshots the controller keeps.
const snapshotRetain = 2

// raftStores is the controller's raft storage under Config.Dir, on
// Config.FS (package raftstore; docs/controller.md).
type raftStores struct {
	log    *raftstore.LogStore
	stable *raftstore.StableStore
	snaps  *raftstore.SnapshotStore
}

// openStores converts an earlier version's raft.db (and the newest
// FileSnapshotStore snapshot) once, then opens the log, stable and
// snapshot stores in dir on fs (nil: the OS file system).
func openStores(dir string, fs vfs.FS, log zerolog.Logger) (*raftStores, error) {
	fs = vfs.Default(fs)
	if err := vfs.MkdirAllSynced(fs, dir, 0o755); err != nil {
		return nil, fmt.Errorf("controller dir: %w", err)
	}
	if _, err := raftstore.MigrateBolt(dir, fs, log); err != nil {
		return nil, fmt.Errorf("controller raft store: %w", err)
	}
	o := raftstore.Options{FS: fs, Logger: log}
	l, err := raftstore.OpenLog(dir, o)
	if err != nil {
		return nil, fmt.Errorf("controller raft log: %w", err)
	}
	stable, err := raftstore.OpenStable(dir, fs)
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("controller raft stable store: %w", err)
	}
	snaps, err := raftstore.OpenSnapshots(dir, snapshotRetain, o)
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("controller snapshot store: %w", err)
	}
	return &raftStores{log: l, stable: stable, snaps: snaps}, nil
}

// hasState reports whether the stores hold a raft state (else the group
// is bootstrapped from the peer list).
func (s *raftStores) hasState() (bool, error) {
	return raft.HasExistingState(s.log, s.stable, s.snaps)
}

// Close closes the log (the stable and snapshot stores hold no open
// file). The name matches the raft-boltdb store it replaces in raft.go.
func (s *raftStores) Close() error {
	if err := s.log.Close(); err != nil {
		return fmt.Errorf("controller raft store: %w", err)
	}
	return nil
}
