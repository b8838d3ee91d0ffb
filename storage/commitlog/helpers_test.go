package commitlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// makeRecord builds a synthetic record of n bytes (n >= MinRecordSize) with
// the V1 magic and a body derived from seq, so records are distinguishable.
func makeRecord(n int, seq int) []byte {
	r := make([]byte, n)
	binary.BigEndian.PutUint32(r[0:4], uint32(n))
	binary.BigEndian.PutUint32(r[4:8], magicV1)
	binary.BigEndian.PutUint32(r[12:16], uint32(seq))
	for i := 36; i < n; i++ {
		r[i] = byte(seq*31 + i)
	}
	return r
}

// makeRecords builds one record per size, numbered from seq.
func makeRecords(seq int, sizes ...int) [][]byte {
	out := make([][]byte, len(sizes))
	for i, n := range sizes {
		out[i] = makeRecord(n, seq+i)
	}
	return out
}

// mustOpen opens a commit log and closes it at the end of the test.
func mustOpen(t testing.TB, dir string, opts Options) *CommitLog {
	t.Helper()
	c, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// mustAppend appends records and fails the test on error.
func mustAppend(t testing.TB, c *CommitLog, records [][]byte) []int64 {
	t.Helper()
	offs, err := c.Append(records)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return offs
}

// readAll reads every record from MinOffset to MaxOffset with Read.
func readAll(t testing.TB, c *CommitLog) (records [][]byte, offsets []int64) {
	t.Helper()
	off := c.MinOffset()
	for {
		rec, next, err := c.Read(off)
		if errors.Is(err, io.EOF) {
			if next != c.MaxOffset() && next != off {
				t.Fatalf("Read EOF next %d, want %d", next, c.MaxOffset())
			}
			return records, offsets
		}
		if err != nil {
			d, ok := damageAt(c, off)
			if !errors.Is(err, ErrCorrupt) || !ok {
				t.Fatalf("Read(%d): %v", off, err)
			}
			// A damaged span recovery kept: readers skip it.
			nx, nerr := c.NextValid(off)
			if nerr != nil || nx != off+d.Size {
				t.Fatalf("NextValid(%d) = %d, %v; want %d (damage %+v)", off, nx, nerr, off+d.Size, d)
			}
			off = nx
			continue
		}
		if next <= off {
			t.Fatalf("Read(%d) next %d does not advance", off, next)
		}
		records = append(records, rec)
		offsets = append(offsets, int64(binary.BigEndian.Uint64(rec[physOffsetPos:])))
		off = next
	}
}

// damageAt returns the damaged span recovery reported at off.
func damageAt(c *CommitLog, off int64) (Damage, bool) {
	for _, d := range c.Recovery().Damaged {
		if d.Offset == off {
			return d, true
		}
	}
	return Damage{}, false
}

// seqOf returns the sequence number makeRecord stored in a record.
func seqOf(rec []byte) int { return int(binary.BigEndian.Uint32(rec[12:16])) }

// checkSeqs asserts that records carry sequence numbers 0..n-1 and valid
// bodies.
func checkSeqs(t testing.TB, records [][]byte, n int) {
	t.Helper()
	if len(records) != n {
		t.Fatalf("got %d records, want %d", len(records), n)
	}
	for i, r := range records {
		want := makeRecord(len(r), i)
		copy(want[physOffsetPos:physOffsetPos+8], r[physOffsetPos:physOffsetPos+8])
		if !bytes.Equal(r, want) {
			t.Fatalf("record %d (seq %d) differs from what was written", i, seqOf(r))
		}
	}
}

// segPath returns the path of the segment starting at base.
func segPath(dir string, base int64) string { return filepath.Join(dir, segmentName(base)) }

// fileSize returns a file's size or fails the test.
func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// segmentFiles lists the segment files in dir.
func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if _, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out
}
