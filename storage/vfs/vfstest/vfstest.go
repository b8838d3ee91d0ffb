// Package vfstest provides vfs.FS wrappers for tests: FaultFS fails chosen
// operations (the Nth write, writes over a size, the Nth sync, every sync,
// creates, truncates, directory syncs, or everything a full disk refuses),
// panics in the Nth sync, or holds file syncs
// (a disk busy writing back), optionally only under one directory, and
// NoSyncFS turns fsync off so fuzzing is not bound by the disk.
package vfstest

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// FaultFS is the real file system (vfs.OS) with injectable faults. The zero
// value injects none. It is safe for concurrent use. Write faults return
// syscall.ENOSPC; sync, truncate and directory-sync faults return
// syscall.EIO; create faults return an *os.PathError wrapping ENOSPC.
type FaultFS struct {
	vfs.OS

	mu           sync.Mutex
	writes       int           // WriteAt calls since FailWrite
	failWrite    int           // 1-based WriteAt call to fail after writing half; 0 = never
	failOver     int           // WriteAt calls of more bytes fail after writing half; 0 = never
	syncs        int           // file Sync calls since FailSync
	failSync     int           // 1-based file Sync call to fail; 0 = never
	failAllSync  bool          // every file Sync fails
	panicSync    int           // file Syncs left until the one that panics; 0 = none
	full         bool          // every WriteAt and create fails with ENOSPC
	failTruncate bool          // every Truncate fails
	failCreate   bool          // every OpenFile with O_CREATE fails
	failSyncDir  bool          // every SyncDir fails
	hit          bool          // a fault was injected since Reset
	scope        string        // faults hit only paths under it ("" = everywhere)
	hold         chan struct{} // file Syncs wait until it is closed (nil: they do not)
}

var _ vfs.FS = (*FaultFS)(nil)

// FailWrite makes the nth WriteAt from now (1-based) write the first half of
// its bytes and then fail with ENOSPC, like a disk filling up mid-write.
// Zero disarms it.
func (fs *FaultFS) FailWrite(n int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.writes, fs.failWrite = 0, n
}

// FailWritesOver makes every WriteAt of more than n bytes write the first
// half of its bytes and then fail with ENOSPC, while smaller writes go
// through: a disk with a little room left, which takes small appends and
// refuses a large one. Zero disarms it.
func (fs *FaultFS) FailWritesOver(n int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.failOver = n
}

// FailSync makes the nth file Sync from now (1-based) fail with EIO. Zero
// disarms it.
func (fs *FaultFS) FailSync(n int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.syncs, fs.failSync = 0, n
}

// PanicSync makes the nth file Sync from now (1-based) panic instead of
// syncing, as a bug reached on the sync path would (the caller's deferred
// unlocks run; the goroutine dies unless something recovers). Zero
// disarms it.
func (fs *FaultFS) PanicSync(n int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.panicSync = n
}

// FailEverySync makes every file Sync fail with EIO while on.
func (fs *FaultFS) FailEverySync(on bool) { fs.setFlag(&fs.failAllSync, on) }

// Full makes the file system behave as a full disk while on: every WriteAt
// writes the first half of its bytes and fails with ENOSPC, and every
// OpenFile with os.O_CREATE fails with ENOSPC. Reads, truncates and syncs
// keep working, so what is stored stays readable and rollbacks succeed.
func (fs *FaultFS) Full(on bool) { fs.setFlag(&fs.full, on) }

// FailTruncate makes every Truncate fail with EIO while on.
func (fs *FaultFS) FailTruncate(on bool) { fs.setFlag(&fs.failTruncate, on) }

// FailCreate makes every OpenFile with os.O_CREATE fail while on.
func (fs *FaultFS) FailCreate(on bool) { fs.setFlag(&fs.failCreate, on) }

// FailSyncDir makes every SyncDir fail with EIO while on.
func (fs *FaultFS) FailSyncDir(on bool) { fs.setFlag(&fs.failSyncDir, on) }

func (fs *FaultFS) setFlag(p *bool, on bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	*p = on
}

// Scope restricts every fault to paths under dir (for example one store's
// directory when several share the FaultFS); "" means everywhere. Reset
// keeps the scope.
func (fs *FaultFS) Scope(dir string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.scope = dir
}

// inScope reports whether path is under the scope. fs.mu must be held.
func (fs *FaultFS) inScope(path string) bool {
	if fs.scope == "" {
		return true
	}
	rel, err := filepath.Rel(fs.scope, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// HoldSyncs makes every file Sync from now on wait until ReleaseSyncs (or
// Reset), like a disk that takes long to write back; a held Sync counts as
// a hit.
func (fs *FaultFS) HoldSyncs() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.hold == nil {
		fs.hold = make(chan struct{})
	}
}

// ReleaseSyncs lets the held file Syncs go on, and later ones run at once.
func (fs *FaultFS) ReleaseSyncs() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.hold != nil {
		close(fs.hold)
		fs.hold = nil
	}
}

// Hit reports whether a fault has been injected since the last Reset.
func (fs *FaultFS) Hit() bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.hit
}

// Reset disarms every fault and clears the counters and Hit.
func (fs *FaultFS) Reset() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.writes, fs.failWrite, fs.failOver, fs.syncs, fs.failSync = 0, 0, 0, 0, 0
	fs.failTruncate, fs.failCreate, fs.failSyncDir, fs.hit = false, false, false, false
	fs.failAllSync, fs.full, fs.panicSync = false, false, 0
	if fs.hold != nil {
		close(fs.hold)
		fs.hold = nil
	}
}

// inject reports whether the fault cond holds and records it as hit.
// fs.mu must be held.
func (fs *FaultFS) inject(cond bool) bool {
	fs.hit = fs.hit || cond
	return cond
}

// OpenFile implements vfs.FS.
func (fs *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	fs.mu.Lock()
	fail := fs.inScope(name) && fs.inject((fs.failCreate || fs.full) && flag&os.O_CREATE != 0)
	fs.mu.Unlock()
	if fail {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	f, err := fs.OS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: f, fs: fs, path: name}, nil
}

// SyncDir implements vfs.FS.
func (fs *FaultFS) SyncDir(dir string) error {
	fs.mu.Lock()
	fail := fs.inScope(dir) && fs.inject(fs.failSyncDir)
	fs.mu.Unlock()
	if fail {
		return syscall.EIO
	}
	return fs.OS.SyncDir(dir)
}

// faultFile is a file opened through a FaultFS.
type faultFile struct {
	vfs.File
	fs   *FaultFS
	path string
}

func (f *faultFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	if !f.fs.inScope(f.path) {
		f.fs.mu.Unlock()
		return f.File.WriteAt(b, off)
	}
	f.fs.writes++
	over := f.fs.failOver > 0 && len(b) > f.fs.failOver
	fail := f.fs.inject(f.fs.writes == f.fs.failWrite || f.fs.full || over)
	f.fs.mu.Unlock()
	if fail {
		n, _ := f.File.WriteAt(b[:len(b)/2], off)
		return n, syscall.ENOSPC
	}
	return f.File.WriteAt(b, off)
}

func (f *faultFile) Sync() error {
	f.fs.mu.Lock()
	if !f.fs.inScope(f.path) {
		f.fs.mu.Unlock()
		return f.File.Sync()
	}
	f.fs.syncs++
	fail := f.fs.inject(f.fs.syncs == f.fs.failSync || f.fs.failAllSync)
	hold := f.fs.hold
	f.fs.inject(hold != nil)
	panicNow := false
	if f.fs.panicSync > 0 {
		f.fs.panicSync--
		panicNow = f.fs.inject(f.fs.panicSync == 0)
	}
	f.fs.mu.Unlock()
	if panicNow {
		panic("vfstest: injected panic in the Sync of " + f.path)
	}
	if hold != nil {
		<-hold
	}
	if fail {
		return syscall.EIO
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	fail := f.fs.inScope(f.path) && f.fs.inject(f.fs.failTruncate)
	f.fs.mu.Unlock()
	if fail {
		return syscall.EIO
	}
	return f.File.Truncate(size)
}
