package commitlog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// fuzzSegSize is the segment size used by FuzzRecover.
const fuzzSegSize = 256

// validSegments writes a small valid log and returns its segment files'
// contents (used as seeds and as the intact first segment).
func validSegments(f *testing.F, sizes ...int) [][]byte {
	f.Helper()
	dir := f.TempDir()
	c, err := Open(dir, Options{SegmentSize: fuzzSegSize})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := c.Append(makeRecords(0, sizes...)); err != nil {
		f.Fatal(err)
	}
	if err := c.Close(); err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, name := range segmentFiles(f, dir) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// FuzzRecover writes arbitrary bytes as a segment file and checks that Open
// never panics or fails, that everything left after recovery reads back
// cleanly, and that the log accepts appends and reopens without cuts.
//
// mode bit 0: the bytes are segment 256 after a valid segment 0 (otherwise
// they are segment 0); bit 1: RecoverFrom = 1 (scan everything).
func FuzzRecover(f *testing.F) {
	segs := validSegments(f, 100, 100, 100, 60, 36)
	first := segs[0]
	for _, s := range segs {
		for mode := uint8(0); mode < 4; mode++ {
			f.Add(s, mode)
			f.Add(s[:len(s)/2], mode)
			f.Add(s[:len(s)-3], mode)
		}
	}
	for _, s := range validSegments(f, 40, 40, 40, 40, 40, 40) {
		f.Add(s, uint8(0))
		f.Add(append(append([]byte(nil), s...), 0xCB, 0xD4, 0x31, 0x94), uint8(1))
	}
	f.Add([]byte{}, uint8(1))
	f.Add(make([]byte, 300), uint8(0))
	f.Add(appendBlank(nil, fuzzSegSize), uint8(0))

	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		dir := t.TempDir()
		target := int64(0)
		if mode&1 != 0 {
			target = fuzzSegSize
			if err := os.WriteFile(segPath(dir, 0), first, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(segPath(dir, target), data, 0o644); err != nil {
			t.Fatal(err)
		}
		opts := Options{SegmentSize: fuzzSegSize, FS: vfstest.NoSyncFS{}}
		if mode&2 != 0 {
			opts.RecoverFrom = 1
		}
		c, err := Open(dir, opts)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer c.Close()
		recs, _ := readAll(t, c)
		info := c.Recovery()
		if info.TruncatedAt >= 0 && info.Reason == "" {
			t.Fatalf("cut without a reason: %+v", info)
		}
		if _, err := c.Append(makeRecords(len(recs), 100, 36)); err != nil {
			t.Fatalf("Append after recovery: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		c, err = Open(dir, Options{SegmentSize: fuzzSegSize, RecoverFrom: 1, FS: vfstest.NoSyncFS{}})
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		if info := c.Recovery(); info.TruncatedAt >= 0 {
			t.Fatalf("second recovery cut: %+v", info)
		}
		if got, _ := readAll(t, c); len(got) != len(recs)+2 {
			t.Fatalf("%d records after append, want %d", len(got), len(recs)+2)
		}
	})
}
