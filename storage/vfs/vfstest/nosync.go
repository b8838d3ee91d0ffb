package vfstest

import (
	"os"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// NoSyncFS is the real file system (vfs.OS) with fsync turned off: file Sync
// and SyncDir do nothing. It lets fuzzers and benchmarks run without waiting
// for the disk; it gives no durability.
type NoSyncFS struct{ vfs.OS }

var _ vfs.FS = NoSyncFS{}

// OpenFile implements vfs.FS.
func (fs NoSyncFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := fs.OS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

// SyncDir implements vfs.FS; it does nothing.
func (NoSyncFS) SyncDir(string) error { return nil }

// noSyncFile is a file whose Sync does nothing.
type noSyncFile struct{ vfs.File }

func (noSyncFile) Sync() error { return nil }
