// Package vfs is the narrow file-system interface the stores (commitlog,
// consumequeue) use, so that tests can inject faults. It follows the idea of
// pebble's vfs and errorfs packages but is kept tiny: only the operations the
// stores need, with OS as the one production implementation. Fault-injecting
// wrappers for tests live in package vfs/vfstest.
package vfs

import (
	"io"
	"os"
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
}

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
