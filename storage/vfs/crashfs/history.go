package crashfs

// The history a reordering crash chooses from: per file, the writes and
// truncations since its last Sync, oldest first (see CrashReorder).

const (
	// maxHistory and maxHistoryBytes bound a file's history: beyond them
	// its oldest change is folded into the file's floor, the earliest
	// state a reordering crash may then keep of it.
	maxHistory      = 4096
	maxHistoryBytes = 64 << 20
)

// change is one write (data at off) or truncation (to size) of a file.
type change struct {
	off   int64
	data  []byte
	size  int64
	trunc bool
}

// record appends c to the file's history, folding the oldest changes into
// the floor when the history grows past its bounds. fs.mu must be held.
func (n *inode) record(c change) {
	n.hist = append(n.hist, c)
	n.histBytes += int64(len(c.data))
	for len(n.hist) > maxHistory || n.histBytes > maxHistoryBytes {
		if n.floor == nil {
			n.floor = append([]byte(nil), n.synced...)
		}
		n.floor = n.hist[0].apply(n.floor)
		n.histBytes -= int64(len(n.hist[0].data))
		n.hist[0] = change{}
		n.hist = n.hist[1:]
	}
}

// forget drops the history: the file's current state is durable.
func (n *inode) forget() {
	n.hist, n.histBytes, n.floor = nil, 0, nil
}

// apply returns b with c applied (b may be modified and grown).
func (c change) apply(b []byte) []byte {
	if c.trunc {
		if c.size <= int64(len(b)) {
			return b[:c.size]
		}
		return append(b, make([]byte, c.size-int64(len(b)))...)
	}
	if end := c.off + int64(len(c.data)); end > int64(len(b)) {
		b = append(b, make([]byte, end-int64(len(b)))...)
	}
	copy(b[c.off:], c.data)
	return b
}

// stateAfter is the file's content after its durable state (or its floor)
// and the first k changes of its history.
func (n *inode) stateAfter(k int) []byte {
	base := n.synced
	if n.floor != nil {
		base = n.floor
	}
	out := append([]byte(nil), base...)
	for _, c := range n.hist[:k] {
		out = c.apply(out)
	}
	return out
}
