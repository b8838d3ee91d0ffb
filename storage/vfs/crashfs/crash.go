package crashfs

import (
	"math/rand"
	"path"
	"sort"
	"strings"
)

// Crash simulates a crash that keeps only what was durable and returns the
// file system a restarted machine would find. The receiver is left as it
// was (see the package documentation).
func (fs *FS) Crash() *FS { return fs.crash(nil, nil) }

// CrashRandom simulates a crash after which, besides everything durable, an
// arbitrary part of what was not is found too (pages of unsynced file data,
// sizes between synced and current, a prefix of the directory changes),
// chosen with r.
func (fs *FS) CrashRandom(r *rand.Rand) *FS { return fs.crash(r, nil) }

// ReorderOptions configure CrashReorder.
type ReorderOptions struct {
	// Ordered tells the files whose writes the disk keeps in order, as it
	// was told (a nil Ordered: IsCommitLog). Such a file keeps only its
	// durable state, or with TearOrdered a random point of its history too.
	Ordered func(name string) bool
	// TearOrdered lets the Ordered files, too, keep any point between their
	// durable and their current state, each independently.
	TearOrdered bool
}

// IsCommitLog reports whether name lies in a directory named "commitlog"
// (at any depth): the default ReorderOptions.Ordered.
func IsCommitLog(name string) bool {
	return strings.Contains(path.Dir(path.Clean("/"+name))+"/", "/commitlog/")
}

// CrashReorder simulates a crash of a disk that reorders writes (a volatile
// controller cache, a restored backup): every file not Ordered independently
// keeps its state after a random prefix of the writes and truncations it
// had since its last Sync (from its durable state, nothing of them, to its
// current state, all of them), whatever the other files kept, so a file
// derived from the CommitLog may keep writes the CommitLog lost. Ordered
// files (by default the CommitLog's) keep their durable state, or with
// TearOrdered a random point of their own history. Directory changes not
// yet synced survive as a random prefix, as with CrashRandom. Everything
// comes from r.
func (fs *FS) CrashReorder(r *rand.Rand, o ReorderOptions) *FS {
	if o.Ordered == nil {
		o.Ordered = IsCommitLog
	}
	return fs.crash(r, &o)
}

// Crashes returns how many crashes produced this file system's lineage.
func (fs *FS) Crashes() int {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.crashes
}

func (fs *FS) crash(r *rand.Rand, reorder *ReorderOptions) *FS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	// The directory entries after the crash: durable ones, plus (random)
	// a prefix of the pending changes, whole rename groups only.
	after := map[*inode]map[string]*inode{}
	entriesOf := func(d *inode) map[string]*inode {
		m, ok := after[d]
		if !ok {
			m = make(map[string]*inode, len(d.durable))
			for k, v := range d.durable {
				m[k] = v
			}
			after[d] = m
		}
		return m
	}
	if r != nil && len(fs.pending) > 0 {
		keep := r.Intn(len(fs.pending) + 1)
		for keep < len(fs.pending) && keep > 0 && fs.pending[keep].group != 0 &&
			fs.pending[keep].group == fs.pending[keep-1].group {
			keep++ // never split a rename
		}
		for _, op := range fs.pending[:keep] {
			m := entriesOf(op.dir)
			if op.target == nil {
				delete(m, op.name)
			} else {
				m[op.name] = op.target
			}
		}
	}
	copies := map[*inode]*inode{}
	var clone func(n *inode, name string) *inode
	clone = func(n *inode, name string) *inode {
		if c, ok := copies[n]; ok {
			return c
		}
		if n.dir {
			c := newDir(n.mode.Perm())
			c.modTime = n.modTime
			copies[n] = c
			entries := entriesOf(n)
			names := make([]string, 0, len(entries))
			for k := range entries {
				names = append(names, k)
			}
			sort.Strings(names) // r is drawn in a fixed order: a seed replays the crash
			for _, childName := range names {
				child := entries[childName]
				cc := clone(child, path.Join(name, childName))
				c.entries[childName], c.durable[childName] = cc, cc
			}
			return c
		}
		c := newFile(n.mode.Perm())
		c.modTime, c.lastSync = n.modTime, n.lastSync
		switch {
		case reorder == nil:
			c.data = survivingData(n, r)
		case reorder.Ordered(name) && !reorder.TearOrdered:
			c.data = append([]byte(nil), n.synced...)
		default:
			c.data = n.stateAfter(r.Intn(len(n.hist) + 1))
		}
		c.synced = append([]byte(nil), c.data...)
		copies[n] = c
		return c
	}
	out := &FS{root: clone(fs.root, "/"), locks: map[string]bool{}, syncs: fs.syncs, crashes: fs.crashes + 1}
	return out
}

// survivingData is the content of n after a crash: its synced bytes, and
// with r some of the unsynced ones.
func survivingData(n *inode, r *rand.Rand) []byte {
	if r == nil || n.dirtyHi <= n.dirtyLo {
		return append([]byte(nil), n.synced...)
	}
	lo, hi := int64(len(n.synced)), int64(len(n.data))
	if lo > hi {
		lo, hi = hi, lo
	}
	size := lo
	if hi > lo {
		size = lo + r.Int63n(hi-lo+1)
	}
	out := make([]byte, size)
	copy(out, n.synced)
	for p := n.dirtyLo / pageSize * pageSize; p < n.dirtyHi && p < size; p += pageSize {
		if r.Intn(2) == 0 {
			continue // this page was not written back
		}
		end := min(p+pageSize, size, int64(len(n.data)))
		if end > p {
			copy(out[p:end], n.data[p:end])
		}
		// beyond the current data (a truncation not yet durable) the
		// page reads as zeros
		for i := max(p, int64(len(n.data))); i < min(p+pageSize, size); i++ {
			out[i] = 0
		}
	}
	return out
}
