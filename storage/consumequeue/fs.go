package consumequeue

import (
	"io"
	"os"
)

// fsys is the small slice of the file system the store uses. It exists so
// tests can inject write and sync failures; production uses osFS.
type fsys interface {
	OpenFile(name string, flag int, perm os.FileMode) (file, error)
	Remove(name string) error
	RemoveAll(name string) error
	ReadDir(dir string) ([]os.DirEntry, error)
	MkdirAll(dir string, perm os.FileMode) error
	// SyncDir fsyncs a directory so that created or removed entries persist.
	SyncDir(dir string) error
}

// file is an open unit file. ReadAt and WriteAt must be positional
// (pread/pwrite) and safe for concurrent use.
type file interface {
	io.ReaderAt
	io.WriterAt
	Truncate(size int64) error
	Sync() error
	Size() (int64, error)
	Close() error
}

// osFS is fsys backed by package os.
type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                 { return os.RemoveAll(name) }
func (osFS) ReadDir(dir string) ([]os.DirEntry, error)   { return os.ReadDir(dir) }
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) SyncDir(dir string) error {
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

// osFile is file backed by *os.File.
type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
