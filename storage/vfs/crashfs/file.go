package crashfs

import (
	"io"
	"os"
	"syscall"
	"time"
)

// file is an open handle. Its methods take the FS lock, so a crash sees
// each call entirely or not at all.
type file struct {
	fs          *FS
	ino         *inode
	name        string
	read, write bool
	closed      bool
}

// markDirty widens the inode's unsynced range to [lo, hi).
func (n *inode) markDirty(lo, hi int64) {
	if hi <= lo {
		return
	}
	if n.dirtyHi <= n.dirtyLo {
		n.dirtyLo, n.dirtyHi = lo, hi
		return
	}
	n.dirtyLo, n.dirtyHi = min(n.dirtyLo, lo), max(n.dirtyHi, hi)
}

// resize sets the file's current size, zero-filling growth.
func (n *inode) resize(size int64) {
	old := int64(len(n.data))
	switch {
	case size < old:
		n.data = n.data[:size]
	case size > old:
		n.data = append(n.data, make([]byte, size-old)...)
	default:
		return
	}
	n.markDirty(min(old, size), max(old, size))
	n.modTime = time.Now()
}

func (f *file) check(op string, write bool) error {
	switch {
	case f.closed:
		return &os.PathError{Op: op, Path: f.name, Err: os.ErrClosed}
	case write && !f.write, !write && !f.read:
		return &os.PathError{Op: op, Path: f.name, Err: syscall.EBADF}
	}
	return nil
}

// ReadAt implements vfs.File.
func (f *file) ReadAt(b []byte, off int64) (int, error) {
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EINVAL}
	}
	if off >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(b, f.ino.data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt implements vfs.File.
func (f *file) WriteAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.EINVAL}
	}
	if len(b) == 0 {
		// pwrite(2) of nothing leaves the size alone, even past the end.
		return 0, nil
	}
	end := off + int64(len(b))
	if end > int64(len(f.ino.data)) {
		f.ino.resize(end)
	}
	copy(f.ino.data[off:], b)
	f.ino.markDirty(off, end)
	f.ino.record(change{off: off, data: append([]byte(nil), b...)})
	f.ino.modTime = time.Now()
	return len(b), nil
}

// Truncate implements vfs.File.
func (f *file) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return &os.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	}
	f.ino.resize(size)
	f.ino.record(change{size: size, trunc: true})
	return nil
}

// Sync implements vfs.File: the file's bytes and size become durable.
func (f *file) Sync() error {
	start := time.Now()
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "sync", Path: f.name, Err: os.ErrClosed}
	}
	n := f.ino
	size := int64(len(n.data))
	if int64(len(n.synced)) > size {
		n.synced = n.synced[:size]
	} else if int64(len(n.synced)) < size {
		n.synced = append(n.synced, make([]byte, size-int64(len(n.synced)))...)
	}
	if lo, hi := n.dirtyLo, min(n.dirtyHi, size); hi > lo {
		copy(n.synced[lo:hi], n.data[lo:hi])
	}
	n.dirtyLo, n.dirtyHi = 0, 0
	n.forget()
	n.lastSync = start
	f.fs.syncs++
	return nil
}

// Size implements vfs.File.
func (f *file) Size() (int64, error) {
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	if f.closed {
		return 0, &os.PathError{Op: "stat", Path: f.name, Err: os.ErrClosed}
	}
	return int64(len(f.ino.data)), nil
}

// Close implements vfs.File. Closing does not sync.
func (f *file) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "close", Path: f.name, Err: os.ErrClosed}
	}
	f.closed = true
	return nil
}
