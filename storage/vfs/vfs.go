// Package vfs is the narrow file-system interface every store uses (the
// CommitLog, the consume queues, the index, the metadata files, the
// TimerLog and the timer checkpoint and snapshot, and the data directory's
// lock), so that tests can inject faults and simulate a crash that forgets
// unsynced writes. It follows the idea of pebble's vfs, errorfs and strict
// MemFS but is kept small: only the operations the stores need, with OS as
// the one production implementation. Fault-injecting wrappers for tests live
// in package vfs/vfstest, the crash-simulating file system in vfs/crashfs.
//
// Durability contract (what crashfs enforces and the stores rely on): a
// file's bytes and size are durable after File.Sync; a directory entry
// (created, removed or renamed file, created directory) is durable after
// SyncDir of the directory holding it. MkdirAllSynced and WriteFileAtomic
// wrap the two patterns the stores need.
package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// FS is the small slice of the file system the stores use.
type FS interface {
	// OpenFile opens name like os.OpenFile.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove removes one file or empty directory, like os.Remove.
	Remove(name string) error
	// RemoveAll removes name and everything below it, like os.RemoveAll.
	RemoveAll(name string) error
	// ReadDir lists dir sorted by name, like os.ReadDir.
	ReadDir(dir string) ([]os.DirEntry, error)
	// MkdirAll creates dir and any missing parents, like os.MkdirAll.
	MkdirAll(dir string, perm os.FileMode) error
	// SyncDir fsyncs a directory so that created or removed entries persist.
	SyncDir(dir string) error
	// Rename renames oldname to newname (replacing it), like os.Rename.
	Rename(oldname, newname string) error
	// Stat describes name, like os.Stat.
	Stat(name string) (os.FileInfo, error)
	// Lock takes an exclusive lock named by the file name (created if
	// needed) for as long as the returned closer is open; a second Lock of
	// the same name fails with ErrLocked while the first is held.
	Lock(name string) (io.Closer, error)
}

// ErrLocked is returned by FS.Lock when the lock is held elsewhere.
var ErrLocked = errors.New("vfs: lock held by another process")

// File is an open file. ReadAt and WriteAt must be positional (pread/pwrite)
// and safe for concurrent use.
type File interface {
	io.ReaderAt
	io.WriterAt
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Sync fsyncs the file's contents.
	Sync() error
	// Size returns the file's current size.
	Size() (int64, error)
	// Close closes the file.
	Close() error
}

// OS is FS backed by package os.
type OS struct{}

var _ FS = OS{}

// OpenFile implements FS.
func (OS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Remove implements FS.
func (OS) Remove(name string) error { return os.Remove(name) }

// RemoveAll implements FS.
func (OS) RemoveAll(name string) error { return os.RemoveAll(name) }

// ReadDir implements FS.
func (OS) ReadDir(dir string) ([]os.DirEntry, error) { return os.ReadDir(dir) }

// MkdirAll implements FS.
func (OS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

// Rename implements FS.
func (OS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Stat implements FS.
func (OS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

// Lock implements FS with flock(2) on name, so that two processes never
// open one data directory.
func (OS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("vfs lock %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("vfs lock %s: %w (%w)", name, ErrLocked, err)
	}
	return f, nil
}

// SyncDir implements FS.
func (OS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}

// osFile is File backed by *os.File.
type osFile struct{ *os.File }

// Size implements File.
func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
