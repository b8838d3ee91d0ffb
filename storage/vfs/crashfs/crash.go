package crashfs

import "math/rand"

// Crash simulates a crash that keeps only what was durable and returns the
// file system a restarted machine would find. The receiver is left as it
// was (see the package documentation).
func (fs *FS) Crash() *FS { return fs.crash(nil) }

// CrashRandom simulates a crash after which, besides everything durable, an
// arbitrary part of what was not is found too (pages of unsynced file data,
// sizes between synced and current, a prefix of the directory changes),
// chosen with r.
func (fs *FS) CrashRandom(r *rand.Rand) *FS { return fs.crash(r) }

// Crashes returns how many crashes produced this file system's lineage.
func (fs *FS) Crashes() int {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.crashes
}

func (fs *FS) crash(r *rand.Rand) *FS {
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
	var clone func(n *inode) *inode
	clone = func(n *inode) *inode {
		if c, ok := copies[n]; ok {
			return c
		}
		if n.dir {
			c := newDir(n.mode.Perm())
			c.modTime = n.modTime
			copies[n] = c
			for name, child := range entriesOf(n) {
				cc := clone(child)
				c.entries[name], c.durable[name] = cc, cc
			}
			return c
		}
		c := newFile(n.mode.Perm())
		c.modTime, c.lastSync = n.modTime, n.lastSync
		c.data = survivingData(n, r)
		c.synced = append([]byte(nil), c.data...)
		copies[n] = c
		return c
	}
	out := &FS{root: clone(fs.root), locks: map[string]bool{}, syncs: fs.syncs, crashes: fs.crashes + 1}
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
