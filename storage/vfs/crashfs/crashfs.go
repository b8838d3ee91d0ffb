// Package crashfs is an in-memory vfs.FS that forgets, at a simulated
// crash, everything that was not made durable: the model of an operating
// system crash or a power cut, which SIGKILL is not (SIGKILL keeps the page
// cache). It follows pebble's strict MemFS.
//
// # What is durable
//
//   - A file's bytes and size are durable after File.Sync of that file (any
//     handle of it). Writes and truncations after the last Sync are not.
//   - A directory entry (a file created, removed or renamed, a directory
//     created or removed) is durable after SyncDir of the directory that
//     holds the entry. A file whose entry is not durable is gone after a
//     crash, however often it was synced; a removal that is not durable is
//     undone, with the file's synced content.
//
// # Crashing
//
// Crash returns a new FS holding what survived, under the same paths, as a
// machine would find its disk after the power came back; the receiver goes
// on working as if nothing had happened (its writes reach nothing anyone
// reads again), so the broker that ran on it can be stopped at leisure while
// a new one opens the copy. Crash keeps exactly the durable state (strict);
// CrashRandom also keeps an arbitrary part of what was not durable, as a
// real disk may have written some of it back before the power went: each
// 4 KiB page of a file's unsynced range independently, a file size anywhere
// between its synced and current size, and a prefix, in order, of the
// directory changes not yet synced (a journaling file system commits them
// in order). Everything a crash decides comes from the rand.Rand given, so
// a test that logs its seed can replay the crash.
//
// # Reordering crashes
//
// Crash and CrashRandom keep every file at least at its durable state and
// never past it in a way the file's own syncs forbid, so a store that
// writes its derived files after syncing its log never finds them ahead of
// the log. A disk that reorders writes (a volatile controller cache, a
// restored backup) does not keep that promise across files. CrashReorder
// models it: every file records its writes and truncations since its last
// Sync (the states it went through), and at the crash each file not
// ReorderOptions.Ordered keeps, independently of every other file, its state
// after a random prefix of them, anywhere from its durable state to its
// current state. A write is kept or lost whole. Ordered files (by default
// those under a "commitlog" directory, IsCommitLog) keep only their durable
// state, or with ReorderOptions.TearOrdered a random point of their own
// history too. So a consume queue, an index or a checkpoint may keep
// entries for records the CommitLog lost. Directory changes survive as with
// CrashRandom (a prefix, in order). A file's history is bounded (4096
// changes, 64 MiB): past that its oldest changes are folded into the
// earliest state a reordering crash may keep of it.
//
// Every operation is atomic with respect to Crash: the copy sees a write,
// a sync or a rename entirely or not at all.
//
// LastSync tells a checker when the latest completed Sync of a file
// started: a write acknowledged before that instant is durable.
package crashfs

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// pageSize is the unit in which CrashRandom keeps or drops unsynced bytes.
const pageSize = 4096

// FS is the crash-simulating file system. The zero value is not usable;
// create one with New. It is safe for concurrent use.
type FS struct {
	mu      sync.RWMutex
	root    *inode
	pending []dirOp // directory changes not yet durable, oldest first
	locks   map[string]bool
	syncs   int64
	crashes int
}

var _ vfs.FS = (*FS)(nil)

// inode is a file or a directory.
type inode struct {
	dir     bool
	mode    os.FileMode
	modTime time.Time

	// A file: data is what reads see, synced what survives a crash; bytes
	// outside [dirtyLo, dirtyHi) are equal in both (up to their lengths).
	data, synced     []byte
	dirtyLo, dirtyHi int64
	lastSync         time.Time // start of the latest completed Sync
	// The writes and truncations since the last Sync, oldest first, and
	// (non-nil) the state their folded-away oldest ones left (history.go).
	hist      []change
	histBytes int64
	floor     []byte

	// A directory: entries as they are, durable as of the last SyncDir.
	entries, durable map[string]*inode
}

// dirOp is one directory change not yet durable: name in dir now refers to
// target (nil: removed). Ops with the same group number are one atomic
// change (the two halves of a rename).
type dirOp struct {
	dir    *inode
	name   string
	target *inode
	group  int
}

// New returns an empty file system holding only the root directory.
func New() *FS {
	return &FS{root: newDir(0o755), locks: map[string]bool{}}
}

func newDir(mode os.FileMode) *inode {
	return &inode{dir: true, mode: mode | os.ModeDir, modTime: time.Now(),
		entries: map[string]*inode{}, durable: map[string]*inode{}}
}

func newFile(mode os.FileMode) *inode {
	return &inode{mode: mode, modTime: time.Now(), dirtyLo: 0, dirtyHi: 0}
}

// split cleans name into its parent directory components and base name.
func split(name string) (parts []string) {
	name = filepath.Clean("/" + name)
	if name == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(name, "/"), "/")
}

func pathErr(op, name string, err error) error {
	return &os.PathError{Op: op, Path: name, Err: err}
}

// lookup finds the inode at parts. fs.mu must be held.
func (fs *FS) lookup(parts []string) (*inode, error) {
	n := fs.root
	for _, p := range parts {
		if !n.dir {
			return nil, syscall.ENOTDIR
		}
		next, ok := n.entries[p]
		if !ok {
			return nil, syscall.ENOENT
		}
		n = next
	}
	return n, nil
}

// parent finds the directory holding the last component of parts.
// fs.mu must be held.
func (fs *FS) parent(op, name string) (*inode, string, error) {
	parts := split(name)
	if len(parts) == 0 {
		return nil, "", pathErr(op, name, syscall.EINVAL)
	}
	d, err := fs.lookup(parts[:len(parts)-1])
	if err != nil {
		return nil, "", pathErr(op, name, err)
	}
	if !d.dir {
		return nil, "", pathErr(op, name, syscall.ENOTDIR)
	}
	return d, parts[len(parts)-1], nil
}

// link sets name in dir to target (nil: removes it) and logs the change as
// not durable. fs.mu must be held.
func (fs *FS) link(dir *inode, name string, target *inode, group int) {
	if target == nil {
		delete(dir.entries, name)
	} else {
		dir.entries[name] = target
	}
	dir.modTime = time.Now()
	fs.pending = append(fs.pending, dirOp{dir: dir, name: name, target: target, group: group})
}

// OpenFile implements vfs.FS. O_RDONLY, O_WRONLY, O_RDWR, O_CREATE, O_EXCL
// and O_TRUNC are supported; O_APPEND is refused (the stores write at
// positions).
func (fs *FS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if flag&os.O_APPEND != 0 {
		return nil, pathErr("open", name, syscall.EINVAL)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, base, err := fs.parent("open", name)
	if err != nil {
		return nil, err
	}
	n, ok := d.entries[base]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, syscall.EEXIST)
	case ok && n.dir:
		return nil, pathErr("open", name, syscall.EISDIR)
	case !ok && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, syscall.ENOENT)
	case !ok:
		n = newFile(perm.Perm())
		fs.link(d, base, n, 0)
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	f := &file{fs: fs, ino: n, name: name, read: acc != os.O_WRONLY, write: acc != os.O_RDONLY}
	if flag&os.O_TRUNC != 0 {
		if !f.write {
			return nil, pathErr("open", name, syscall.EINVAL)
		}
		n.resize(0)
		n.record(change{trunc: true})
	}
	return f, nil
}

// Remove implements vfs.FS.
func (fs *FS) Remove(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, base, err := fs.parent("remove", name)
	if err != nil {
		return err
	}
	n, ok := d.entries[base]
	if !ok {
		return pathErr("remove", name, syscall.ENOENT)
	}
	if n.dir && len(n.entries) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	fs.link(d, base, nil, 0)
	return nil
}

// RemoveAll implements vfs.FS: the entry goes from its directory, and with
// it everything below (which a crash brings back if that directory was not
// synced).
func (fs *FS) RemoveAll(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, base, err := fs.parent("removeall", name)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok && pe.Err == syscall.ENOENT {
			return nil
		}
		return err
	}
	if _, ok := d.entries[base]; ok {
		fs.link(d, base, nil, 0)
	}
	return nil
}

// Rename implements vfs.FS. Replacing an existing directory is refused.
func (fs *FS) Rename(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	od, ob, err := fs.parent("rename", oldname)
	if err != nil {
		return err
	}
	nd, nb, err := fs.parent("rename", newname)
	if err != nil {
		return err
	}
	n, ok := od.entries[ob]
	if !ok {
		return pathErr("rename", oldname, syscall.ENOENT)
	}
	if old, ok := nd.entries[nb]; ok && old.dir {
		return pathErr("rename", newname, syscall.EISDIR)
	}
	if od == nd && ob == nb {
		return nil
	}
	group := len(fs.pending) + 1 // unique among pending ops: both halves share it
	fs.link(od, ob, nil, group)
	fs.link(nd, nb, n, group)
	return nil
}

// ReadDir implements vfs.FS.
func (fs *FS) ReadDir(dir string) ([]os.DirEntry, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	d, err := fs.lookup(split(dir))
	if err != nil {
		return nil, pathErr("readdir", dir, err)
	}
	if !d.dir {
		return nil, pathErr("readdir", dir, syscall.ENOTDIR)
	}
	out := make([]os.DirEntry, 0, len(d.entries))
	for name, n := range d.entries {
		out = append(out, fs.info(name, n))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// MkdirAll implements vfs.FS. The new directories' entries are not durable
// until their parents are synced (see vfs.MkdirAllSynced).
func (fs *FS) MkdirAll(dir string, perm os.FileMode) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := fs.root
	for _, p := range split(dir) {
		next, ok := n.entries[p]
		switch {
		case !ok:
			next = newDir(perm.Perm())
			fs.link(n, p, next, 0)
		case !next.dir:
			return pathErr("mkdir", dir, syscall.ENOTDIR)
		}
		n = next
	}
	return nil
}

// SyncDir implements vfs.FS: the directory's entries become durable.
func (fs *FS) SyncDir(dir string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, err := fs.lookup(split(dir))
	if err != nil {
		return pathErr("syncdir", dir, err)
	}
	if !d.dir {
		return pathErr("syncdir", dir, syscall.ENOTDIR)
	}
	d.durable = make(map[string]*inode, len(d.entries))
	for k, v := range d.entries {
		d.durable[k] = v
	}
	kept := fs.pending[:0]
	for _, op := range fs.pending {
		if op.dir != d {
			kept = append(kept, op)
		}
	}
	clear(fs.pending[len(kept):])
	fs.pending = kept
	return nil
}

// Stat implements vfs.FS.
func (fs *FS) Stat(name string) (os.FileInfo, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	n, err := fs.lookup(split(name))
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	parts := split(name)
	base := "/"
	if len(parts) > 0 {
		base = parts[len(parts)-1]
	}
	return fs.info(base, n), nil
}

// Lock implements vfs.FS: the lock file is created like any file; the lock
// itself lives only in this FS value (a crash releases it).
func (fs *FS) Lock(name string) (io.Closer, error) {
	f, err := fs.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	_ = f.Close()
	key := filepath.Clean("/" + name)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.locks[key] {
		return nil, pathErr("lock", name, vfs.ErrLocked)
	}
	fs.locks[key] = true
	return &lock{fs: fs, key: key}, nil
}

// lock is a held Lock.
type lock struct {
	fs   *FS
	key  string
	once sync.Once
}

func (l *lock) Close() error {
	l.once.Do(func() {
		l.fs.mu.Lock()
		delete(l.fs.locks, l.key)
		l.fs.mu.Unlock()
	})
	return nil
}

// LastSync returns when the latest completed Sync of the file name started
// (every write that finished before then is durable); ok is false when the
// file does not exist or was never synced.
func (fs *FS) LastSync(name string) (at time.Time, ok bool) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	n, err := fs.lookup(split(name))
	if err != nil || n.dir || n.lastSync.IsZero() {
		return time.Time{}, false
	}
	return n.lastSync, true
}

// Syncs returns the number of file Syncs so far.
func (fs *FS) Syncs() int64 {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.syncs
}

// Unsynced returns the number of directory changes and the number of bytes
// of file data (summed dirty ranges) a strict crash would now forget.
func (fs *FS) Unsynced() (dirOps int, bytes int64) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	seen := map[*inode]bool{}
	var walk func(n *inode)
	walk = func(n *inode) {
		if seen[n] {
			return
		}
		seen[n] = true
		if !n.dir {
			if n.dirtyHi > n.dirtyLo {
				bytes += n.dirtyHi - n.dirtyLo
			}
			return
		}
		for _, c := range n.entries {
			walk(c)
		}
	}
	walk(fs.root)
	return len(fs.pending), bytes
}

// info describes n under name.
func (fs *FS) info(name string, n *inode) fileInfo {
	fi := fileInfo{name: name, mode: n.mode, modTime: n.modTime}
	if !n.dir {
		fi.size = int64(len(n.data))
	}
	return fi
}

// fileInfo implements os.FileInfo and os.DirEntry.
type fileInfo struct {
	name    string
	size    int64
	mode    os.FileMode
	modTime time.Time
}

func (fi fileInfo) Name() string               { return fi.name }
func (fi fileInfo) Size() int64                { return fi.size }
func (fi fileInfo) Mode() os.FileMode          { return fi.mode }
func (fi fileInfo) ModTime() time.Time         { return fi.modTime }
func (fi fileInfo) IsDir() bool                { return fi.mode.IsDir() }
func (fi fileInfo) Sys() any                   { return nil }
func (fi fileInfo) Type() os.FileMode          { return fi.mode.Type() }
func (fi fileInfo) Info() (fs.FileInfo, error) { return fi, nil }
