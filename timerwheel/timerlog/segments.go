package timerlog

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// segment is one segment file (tidwall/wal's layout): entries first,
// first+1, ...
type segment struct {
	first uint64
	path  string
}

// segmentName is tidwall/wal's file name for a segment starting at first.
func segmentName(first uint64) string { return fmt.Sprintf("%020d", first) }

// listSegments returns the plain segment files of dir in index order.
// Names that are not 20 decimal digits (tidwall/wal's .START/.END/.TEMP
// files, or anything else) are skipped.
func listSegments(fs vfs.FS, dir string) ([]segment, error) {
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("timerlog list %s: %w", dir, err)
	}
	var segs []segment
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || len(name) != 20 {
			continue
		}
		first, err := strconv.ParseUint(name, 10, 64)
		if err != nil || first == 0 {
			continue
		}
		segs = append(segs, segment{first: first, path: filepath.Join(dir, name)})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].first < segs[j].first })
	return segs, nil
}

// segmentMirror is the log's list of segments and the size of the tail.
// Segments cycle where tidwall/wal cycles them: to a new file when the tail
// holds at least SegmentSize bytes after an entry (and at the start of a
// batch when it already holds more); every entry is EntrySize bytes, so the
// boundaries are deterministic.
type segmentMirror struct {
	segs      []segment
	tailCount uint64 // entries in the tail segment
	segSize   int
	dir       string
	created   bool // a segment file was created since the last directory sync
}

// segmentOf returns the index in segs of the segment holding seq, or -1.
func (m *segmentMirror) segmentOf(seq uint64) int {
	i := sort.Search(len(m.segs), func(i int) bool { return m.segs[i].first > seq })
	return i - 1
}

// last returns the sequence of the last entry (first-1 of the tail when
// the log is empty).
func (m *segmentMirror) last() uint64 {
	t := m.segs[len(m.segs)-1]
	return t.first + m.tailCount - 1
}

// overfull reports whether the tail holds more than SegmentSize bytes (a
// segment written with a larger SegmentSize): a batch starts a new segment.
func (m *segmentMirror) overfull() bool { return m.tailCount*EntrySize > uint64(m.segSize) }

// cycle adds the segment that starts after the last entry as the new tail.
func (m *segmentMirror) cycle() segment {
	next := m.last() + 1
	seg := segment{first: next, path: filepath.Join(m.dir, segmentName(next))}
	m.segs = append(m.segs, seg)
	m.tailCount = 0
	m.created = true
	return seg
}
