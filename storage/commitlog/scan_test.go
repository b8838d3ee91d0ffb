package commitlog

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// readSkipping reads the whole log like the dispatcher does: a corrupt
// entry is skipped with NextValid. It returns the records read and the
// skipped spans as [from, to) pairs.
func readSkipping(t *testing.T, c *CommitLog) (recs [][]byte, skipped [][2]int64) {
	t.Helper()
	off := c.MinOffset()
	for n := 0; ; n++ {
		if n > 10000 {
			t.Fatal("read loop does not end")
		}
		rec, next, err := c.Read(off)
		if errors.Is(err, io.EOF) {
			return recs, skipped
		}
		if errors.Is(err, ErrCorrupt) {
			nx, err := c.NextValid(next)
			if err != nil {
				t.Fatalf("NextValid(%d): %v", next, err)
			}
			if nx <= next {
				t.Fatalf("NextValid(%d) = %d does not advance", next, nx)
			}
			skipped = append(skipped, [2]int64{next, nx})
			off = nx
			continue
		}
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		recs = append(recs, rec)
		off = next
	}
}

// TestNextValidSkipsOneRecord damages one entry of the two-segment fixture
// in different ways and checks that a skipping reader loses exactly that
// record and skips exactly its span.
//
//	segment 0:   record 0 @0, record 1 @104, blank @208 (48 bytes)
//	segment 256: record 2 @256, record 3 @360; max offset 464
func TestNextValidSkipsOneRecord(t *testing.T) {
	tests := []struct {
		name      string
		seg       int64 // segment file damaged
		pos       []int64
		wantSeqs  []int
		wantSkips [][2]int64
	}{
		{"body byte of record 1", 0, []int64{104 + 60}, []int{0, 2, 3}, [][2]int64{{104, 208}}},
		{"TOTALSIZE of record 1", 0, []int64{104 + 2}, []int{0, 2, 3}, [][2]int64{{104, 208}}},
		{"magic of record 0", 0, []int64{5}, []int{1, 2, 3}, [][2]int64{{0, 104}}},
		{"CRC trailer of record 0", 0, []int64{101}, []int{1, 2, 3}, [][2]int64{{0, 104}}},
		{"PHYSICALOFFSET of record 2", 256, []int64{physOffsetPos + 7}, []int{0, 1, 3}, [][2]int64{{256, 360}}},
		{"first record of a segment, header and body", 256, []int64{0, 1, 2, 3, 40}, []int{0, 1, 3}, [][2]int64{{256, 360}}},
		{"blank marker", 0, []int64{208 + 6}, []int{0, 1, 2, 3}, [][2]int64{{208, 256}}},
		{"last record of the log", 256, []int64{104 + 50}, []int{0, 1, 2}, [][2]int64{{360, 464}}},
		{"two records in a row", 0, []int64{10 + 30, 104 + 30}, []int{2, 3}, [][2]int64{{0, 208}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			buildTwoSegments(t, dir)
			c := mustOpen(t, dir, Options{SegmentSize: 256})
			for _, p := range tc.pos {
				flipByte(p)(t, segPath(dir, tc.seg))
			}
			recs, skips := readSkipping(t, c)
			var seqs []int
			for _, r := range recs {
				seqs = append(seqs, seqOf(r))
			}
			if !slices.Equal(seqs, tc.wantSeqs) {
				t.Fatalf("records %v, want %v", seqs, tc.wantSeqs)
			}
			if len(skips) != len(tc.wantSkips) || (len(skips) > 0 && skips[0] != tc.wantSkips[0]) {
				t.Fatalf("skipped %v, want %v", skips, tc.wantSkips)
			}
		})
	}
}

// TestBitRotSkipLosesOneRecord flips random bits of a written log one at a
// time: a skipping reader must lose at most the one entry holding the flip,
// and read every other record intact.
func TestBitRotSkipLosesOneRecord(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, dir, Options{SegmentSize: 512})
	var sizes []int
	for i := 0; i < 40; i++ {
		sizes = append(sizes, 36+i*7%150)
	}
	offs := mustAppend(t, c, makeRecords(0, sizes...))
	files := segmentFiles(t, dir)
	rng := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 200; i++ {
		name := files[rng.IntN(len(files))]
		base, _ := parseSegmentName(name)
		path := dir + "/" + name
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pos := rng.IntN(len(data))
		bit := byte(1) << rng.IntN(8)
		data[pos] ^= bit
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// The record whose entry holds the flipped byte, if any.
		hit := -1
		for k, off := range offs {
			if g := base + int64(pos); g >= off && g < off+int64(sizes[k])+crcSize {
				hit = k
			}
		}
		recs, skips := readSkipping(t, c)
		want := len(sizes)
		if hit >= 0 {
			want--
		}
		if len(recs) != want || len(skips) != 1 {
			t.Fatalf("flip at %s:%d (record %d): %d records and skips %v, want %d records and one skip",
				name, pos, hit, len(recs), skips, want)
		}
		if hit >= 0 && (skips[0][0] != offs[hit] || skips[0][1] != offs[hit]+int64(sizes[hit])+crcSize) {
			if !(hit == len(offs)-1 || skips[0][1] == base+512) || skips[0][0] != offs[hit] {
				t.Fatalf("flip in record %d @%d: skipped %v", hit, offs[hit], skips)
			}
		}
		for _, r := range recs {
			if seqOf(r) == hit {
				t.Fatalf("damaged record %d was read", hit)
			}
		}
		data[pos] ^= bit
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadBlockStopsBeforeDamage checks that ReadBlock returns the records
// before a damaged entry and reports the damage on the next call, at the
// damaged entry's offset.
func TestReadBlockStopsBeforeDamage(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, dir, Options{SegmentSize: 1024})
	offs := mustAppend(t, c, makeRecords(0, 100, 100, 100, 100))
	flipByte(offs[2]+70)(t, segPath(dir, 0))
	recs, got, next, err := c.ReadBlock(0, 0)
	if err != nil || len(recs) != 2 || got[1] != offs[1] || next != offs[2] {
		t.Fatalf("ReadBlock(0) = %d records %v next %d err %v; want 2 records, next %d", len(recs), got, next, err, offs[2])
	}
	_, _, next, err = c.ReadBlock(next, 0)
	if !errors.Is(err, ErrCorrupt) || next != offs[2] {
		t.Fatalf("ReadBlock(%d) = next %d err %v; want ErrCorrupt at %d", offs[2], next, err, offs[2])
	}
	nx, err := c.NextValid(next)
	if err != nil || nx != offs[3] {
		t.Fatalf("NextValid(%d) = %d, %v; want %d", next, nx, err, offs[3])
	}
}

// TestRecoveryKeepsDamageInsideTheTail damages a record in the middle of
// the last segment: recovery must keep the records after it (and report the
// span) instead of cutting the log there; damage at the very end is still
// cut as a torn tail.
func TestRecoveryKeepsDamageInsideTheTail(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, dir, Options{SegmentSize: 4096})
	offs := mustAppend(t, c, makeRecords(0, 100, 100, 100, 100, 100))
	end := c.MaxOffset()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	flipByte(offs[1]+50)(t, segPath(dir, 0))
	c = mustOpen(t, dir, Options{SegmentSize: 4096})
	info := c.Recovery()
	if info.TruncatedAt != -1 || c.MaxOffset() != end {
		t.Fatalf("recovery cut the log: %+v, max %d want %d", info, c.MaxOffset(), end)
	}
	if len(info.Damaged) != 1 || info.Damaged[0].Offset != offs[1] || info.Damaged[0].Size != 104 {
		t.Fatalf("damaged spans %+v, want one at %d of 104 bytes", info.Damaged, offs[1])
	}
	recs, _ := readAll(t, c)
	if len(recs) != 4 {
		t.Fatalf("%d records readable, want 4", len(recs))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage in the last record: nothing valid after it, a torn tail.
	flipByte(offs[4]+50)(t, segPath(dir, 0))
	c = mustOpen(t, dir, Options{SegmentSize: 4096})
	if info := c.Recovery(); info.TruncatedAt != offs[4] || c.MaxOffset() != offs[4] {
		t.Fatalf("torn tail not cut: %+v, max %d", info, c.MaxOffset())
	}
}

// FuzzScanSegment feeds arbitrary bytes to ScanSegment as a segment file
// and checks that it never panics, that its items tile the file from 0 to
// its end without gaps or overlaps, that every record it returns verifies,
// and that only the last item may be torn.
func FuzzScanSegment(f *testing.F) {
	for _, s := range validSegments(f, 100, 100, 100, 60, 36) {
		f.Add(s, uint8(0))
		f.Add(s[:len(s)/2], uint8(1))
		d := append([]byte(nil), s...)
		d[len(d)/3] ^= 0x10
		f.Add(d, uint8(0))
	}
	f.Add(make([]byte, 300), uint8(0))
	f.Add(appendBlank(nil, fuzzSegSize), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, base uint8) {
		if len(data) > fuzzSegSize {
			data = data[:fuzzSegSize]
		}
		segBase := int64(base%2) * fuzzSegSize
		pos := segBase
		var kinds []EntryKind
		_, err := ScanSegment(bytesReaderAt(data), segBase, int64(len(data)), fuzzSegSize, func(e Entry) error {
			if e.Offset != pos {
				t.Fatalf("item %s at %d, expected %d", e.Kind, e.Offset, pos)
			}
			switch e.Kind {
			case EntryRecord:
				entry := data[e.Offset-segBase : e.Offset-segBase+e.Size]
				if err := CheckEntry(entry, e.Offset); err != nil {
					t.Fatalf("record at %d does not verify: %v", e.Offset, err)
				}
				pos += e.Size
			case EntryBlank:
				pos += blankSize
			default:
				if e.Size <= 0 || e.Reason == "" {
					t.Fatalf("%s span at %d: size %d reason %q", e.Kind, e.Offset, e.Size, e.Reason)
				}
				pos += e.Size
			}
			kinds = append(kinds, e.Kind)
			return nil
		})
		if err != nil {
			t.Fatalf("ScanSegment: %v", err)
		}
		if pos != segBase+int64(len(data)) {
			t.Fatalf("items end at %d, file ends at %d", pos, segBase+int64(len(data)))
		}
		for i, k := range kinds {
			if k == EntryTorn && i != len(kinds)-1 {
				t.Fatalf("torn item %d of %d", i, len(kinds))
			}
		}
	})
}

// bytesReaderAt reads a byte slice.
type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
