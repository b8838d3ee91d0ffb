package history

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// RangeSize is the span of one CRC comparison of CompareCommitLogs.
const RangeSize = 1 << 20

// segmentNameLen is the length of a CommitLog segment file name: the base
// offset in 20 decimal digits (storage/commitlog's segmentName).
const segmentNameLen = 20

// LogDiff is the result of CompareCommitLogs.
type LogDiff struct {
	// Ranges is the number of RangeSize ranges compared.
	Ranges int
	// Same reports that every data dir holds the same bytes up to the
	// offset.
	Same bool
	// Offset is the first byte that differs (-1 when Same).
	Offset int64
	// Detail names the dirs and bytes at Offset.
	Detail string
}

// segments lists the CommitLog segments of a data dir (<data>/commitlog,
// files named by their 20-digit base offset), sorted by base.
func segments(dataDir string) ([]int64, error) {
	dir := filepath.Join(dataDir, "commitlog")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("commitlog of %s: %w", dataDir, err)
	}
	var bases []int64
	for _, e := range ents {
		if e.IsDir() || len(e.Name()) != segmentNameLen {
			continue
		}
		b, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil {
			continue
		}
		bases = append(bases, b)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// logReader reads one data dir's CommitLog as one byte stream by offset.
type logReader struct {
	dir   string
	bases []int64
}

// readAt fills b with the log's bytes at off; a short log is an error.
func (l logReader) readAt(b []byte, off int64) error {
	for len(b) > 0 {
		i := sort.Search(len(l.bases), func(i int) bool { return l.bases[i] > off }) - 1
		if i < 0 {
			return fmt.Errorf("commitlog of %s: no segment holds offset %d", l.dir, off)
		}
		f, err := os.Open(filepath.Join(l.dir, "commitlog", fmt.Sprintf("%0*d", segmentNameLen, l.bases[i])))
		if err != nil {
			return fmt.Errorf("commitlog of %s: %w", l.dir, err)
		}
		want := len(b)
		if i+1 < len(l.bases) {
			want = int(min(int64(want), l.bases[i+1]-off))
		}
		n, err := f.ReadAt(b[:want], off-l.bases[i])
		_ = f.Close()
		if n < want {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("commitlog of %s: offset %d: holds fewer bytes than asked: %w", l.dir, off+int64(n), err)
		}
		b, off = b[want:], off+int64(want)
	}
	return nil
}

// CompareCommitLogs compares the CommitLogs of dataDirs byte for byte over
// [0, upTo): CRC32 per RangeSize range, and on the first range whose CRCs
// differ, the first differing byte. A dir whose log is shorter than upTo is
// an error.
func CompareCommitLogs(dataDirs []string, upTo int64) (LogDiff, error) {
	if len(dataDirs) < 2 {
		return LogDiff{}, fmt.Errorf("compare commitlogs: need two data dirs or more, got %d", len(dataDirs))
	}
	logs := make([]logReader, len(dataDirs))
	for i, d := range dataDirs {
		bases, err := segments(d)
		if err != nil {
			return LogDiff{}, err
		}
		logs[i] = logReader{dir: d, bases: bases}
	}
	bufs := make([][]byte, len(logs))
	for i := range bufs {
		bufs[i] = make([]byte, RangeSize)
	}
	out := LogDiff{Offset: -1}
	for off := int64(0); off < upTo; off += RangeSize {
		n := int(min(RangeSize, upTo-off))
		out.Ranges++
		var crc0 uint32
		for i, l := range logs {
			if err := l.readAt(bufs[i][:n], off); err != nil {
				return out, err
			}
			c := crc32.ChecksumIEEE(bufs[i][:n])
			if i == 0 {
				crc0 = c
				continue
			}
			if c != crc0 {
				at := firstDiff(bufs[0][:n], bufs[i][:n])
				out.Offset = off + int64(at)
				out.Detail = fmt.Sprintf("range [%d,%d): crc %08x in %s, %08x in %s; first difference at %d: %#02x vs %#02x",
					off, off+int64(n), crc0, logs[0].dir, c, l.dir, out.Offset, bufs[0][at], bufs[i][at])
				return out, nil
			}
		}
	}
	out.Same = true
	return out, nil
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// CompareFiles reports whether every file of paths has the same bytes (the
// replicas' epoch files, <data>/ha/epochs); detail names the first one that
// differs from the first.
func CompareFiles(paths []string) (same bool, detail string, err error) {
	var first []byte
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return false, "", fmt.Errorf("compare files: %w", err)
		}
		if i == 0 {
			first = b
			continue
		}
		if !bytes.Equal(b, first) {
			at := firstDiff(first[:min(len(first), len(b))], b[:min(len(first), len(b))])
			return false, fmt.Sprintf("%s and %s differ at byte %d (sizes %d, %d)", paths[0], p, at, len(first), len(b)), nil
		}
	}
	return true, "", nil
}
