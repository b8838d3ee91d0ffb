package commitlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
)

func TestAppendReadRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		segSize int64
		sizes   []int // record sizes, appended in batches of batch
		batch   int
		wantSeg int // segment files expected afterwards
	}{
		{"single record", 1024, []int{100}, 1, 1},
		{"one segment", 1024, []int{100, 200, 36, 300}, 2, 1},
		{"exactly full segment", 256, []int{124, 124, 60}, 1, 2},
		{"blank marker", 256, []int{100, 100, 100, 100}, 1, 2},
		{"tail below 8 bytes", 256, []int{124, 120, 50}, 3, 2},
		{"batch spans segments", 256, []int{100, 100, 100, 100, 100, 100, 100}, 7, 4},
		{"largest record", 256, []int{252, 252, 40}, 2, 3},
		{"many small", 4096, repeat(40, 500), 32, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := mustOpen(t, dir, Options{SegmentSize: tt.segSize})
			var all [][]byte
			var offs []int64
			for i := 0; i < len(tt.sizes); i += tt.batch {
				j := min(i+tt.batch, len(tt.sizes))
				recs := makeRecords(i, tt.sizes[i:j]...)
				got := mustAppend(t, c, recs)
				all = append(all, recs...)
				offs = append(offs, got...)
			}
			for i, r := range all {
				if p := int64(binary.BigEndian.Uint64(r[physOffsetPos:])); p != offs[i] {
					t.Fatalf("record %d PHYSICALOFFSET %d, offset %d", i, p, offs[i])
				}
				if i > 0 && offs[i] <= offs[i-1] {
					t.Fatalf("offsets not increasing: %v", offs)
				}
				if seg := offs[i] / tt.segSize; (offs[i]+int64(len(r))+crcSize-1)/tt.segSize != seg {
					t.Fatalf("record %d at %d crosses a segment end", i, offs[i])
				}
				got, err := c.ReadAt(offs[i], int32(len(r)))
				if err != nil {
					t.Fatalf("ReadAt(%d): %v", offs[i], err)
				}
				if !bytes.Equal(got, r) {
					t.Fatalf("ReadAt(%d) returned different bytes", offs[i])
				}
			}
			recs, roffs := readAll(t, c)
			checkSeqs(t, recs, len(tt.sizes))
			for i := range roffs {
				if roffs[i] != offs[i] {
					t.Fatalf("Read offsets %v, Append offsets %v", roffs, offs)
				}
			}
			if n := len(segmentFiles(t, dir)); n != tt.wantSeg {
				t.Fatalf("%d segment files, want %d", n, tt.wantSeg)
			}
			last := offs[len(offs)-1] + int64(len(all[len(all)-1])) + crcSize
			if c.MaxOffset() != last {
				t.Fatalf("MaxOffset %d, want %d", c.MaxOffset(), last)
			}
		})
	}
}

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestBlankMarkerOnDisk(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, dir, Options{SegmentSize: 256})
	// Two entries of 104 bytes leave 48 bytes: the third goes to 256.
	offs := mustAppend(t, c, makeRecords(0, 100, 100, 100))
	if want := []int64{0, 104, 256}; !slices.Equal(offs, want) {
		t.Fatalf("offsets %v, want %v", offs, want)
	}
	data, err := os.ReadFile(segPath(dir, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 216 {
		t.Fatalf("segment 0 is %d bytes, want 216 (no preallocation)", len(data))
	}
	if size, magic := binary.BigEndian.Uint32(data[208:]), binary.BigEndian.Uint32(data[212:]); size != 48 || magic != magicBlank {
		t.Fatalf("blank marker size %d magic %#x", size, magic)
	}
	// Reading at the blank returns the record in the next segment.
	rec, next, err := c.Read(208)
	if err != nil || seqOf(rec) != 2 || next != 256+104 {
		t.Fatalf("Read(208) = seq %d, next %d, %v", seqOf(rec), next, err)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{SegmentSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, makeRecords(0, 100, 200, 300, 50))
	max := c.MaxOffset()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = mustOpen(t, dir, Options{SegmentSize: 512})
	if c.MaxOffset() != max || c.FlushedOffset() != max || c.MinOffset() != 0 {
		t.Fatalf("after reopen max %d flushed %d min %d, want max %d", c.MaxOffset(), c.FlushedOffset(), c.MinOffset(), max)
	}
	if info := c.Recovery(); info.TruncatedAt != -1 || info.TruncatedBytes != 0 || info.Records == 0 {
		t.Fatalf("clean reopen recovery %+v", info)
	}
	mustAppend(t, c, makeRecords(4, 120, 400))
	recs, _ := readAll(t, c)
	checkSeqs(t, recs, 6)
}

func TestAppendRejectsInvalidRecords(t *testing.T) {
	bad := func(mut func(r []byte) []byte) []byte { return mut(makeRecord(100, 0)) }
	tests := []struct {
		name string
		rec  []byte
		want error
	}{
		{"too short", makeRecord(100, 0)[:35], ErrInvalidRecord},
		{"size mismatch", bad(func(r []byte) []byte { r[3]++; return r }), ErrInvalidRecord},
		{"blank magic", bad(func(r []byte) []byte { binary.BigEndian.PutUint32(r[4:], magicBlank); return r }), ErrInvalidRecord},
		{"unknown magic", bad(func(r []byte) []byte { r[7] = 0; return r }), ErrInvalidRecord},
		{"larger than segment", makeRecord(253, 0), ErrRecordTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustOpen(t, t.TempDir(), Options{SegmentSize: 256})
			mustAppend(t, c, makeRecords(0, 40))
			_, err := c.Append([][]byte{makeRecord(40, 1), tt.rec})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Append error %v, want %v", err, tt.want)
			}
			if c.MaxOffset() != 44 {
				t.Fatalf("MaxOffset %d after rejected append, want 44", c.MaxOffset())
			}
		})
	}
}

func TestV2MagicAccepted(t *testing.T) {
	c := mustOpen(t, t.TempDir(), Options{SegmentSize: 1024})
	r := makeRecord(80, 0)
	binary.BigEndian.PutUint32(r[4:], magicV2)
	offs := mustAppend(t, c, [][]byte{r})
	if got, err := c.ReadAt(offs[0], 80); err != nil || !bytes.Equal(got, r) {
		t.Fatalf("ReadAt: %v", err)
	}
}

func TestReadErrors(t *testing.T) {
	c := mustOpen(t, t.TempDir(), Options{SegmentSize: 256})
	mustAppend(t, c, makeRecords(0, 100, 100, 100)) // at 0, 104, 256; max 360
	tests := []struct {
		name string
		read func() error
		want error
	}{
		{"ReadAt beyond max", func() error { _, err := c.ReadAt(256, 101); return err }, ErrOutOfRange},
		{"ReadAt negative", func() error { _, err := c.ReadAt(-1, 100); return err }, ErrOutOfRange},
		{"ReadAt tiny size", func() error { _, err := c.ReadAt(0, 8); return err }, ErrOutOfRange},
		{"ReadAt crossing segment", func() error { _, err := c.ReadAt(208, 100); return err }, ErrOutOfRange},
		{"ReadAt wrong size", func() error { _, err := c.ReadAt(0, 99); return err }, ErrCorrupt},
		{"ReadAt misaligned", func() error { _, err := c.ReadAt(4, 100); return err }, ErrCorrupt},
		{"Read misaligned", func() error { _, _, err := c.Read(8); return err }, ErrCorrupt},
		{"Read at max", func() error { _, _, err := c.Read(360); return err }, io.EOF},
		{"Read past max", func() error { _, _, err := c.Read(361); return err }, ErrOutOfRange},
		{"Read negative", func() error { _, _, err := c.Read(-5); return err }, ErrOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.read(); !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSyncAdvancesFlushedOffset(t *testing.T) {
	c := mustOpen(t, t.TempDir(), Options{SegmentSize: 256})
	mustAppend(t, c, makeRecords(0, 100, 100, 100))
	if c.FlushedOffset() != 0 {
		t.Fatalf("FlushedOffset %d before Sync", c.FlushedOffset())
	}
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	if c.FlushedOffset() != c.MaxOffset() {
		t.Fatalf("FlushedOffset %d, MaxOffset %d", c.FlushedOffset(), c.MaxOffset())
	}
	if err := c.Sync(); err != nil { // nothing new: no-op
		t.Fatal(err)
	}
}

func TestClosed(t *testing.T) {
	c, err := Open(t.TempDir(), Options{SegmentSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, makeRecords(0, 40))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(makeRecords(1, 40)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, _, err := c.Read(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if err := c.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}
	if err := c.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func TestOpenOptions(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{SegmentSize: 100}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("small segment: %v", err)
	}
	dir := t.TempDir()
	c, err := Open(dir, Options{SegmentSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, makeRecords(0, 200, 200))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{SegmentSize: 512}); !errors.Is(err, ErrLayout) {
		t.Fatalf("reopen with other segment size: %v", err)
	}
	if err := os.WriteFile(segPath(dir, 0)+".tmp", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory with a segment's name is not a segment either.
	if err := os.Mkdir(segPath(dir, 512), 0o755); err != nil {
		t.Fatal(err)
	}
	c = mustOpen(t, dir, Options{SegmentSize: 256}) // unknown files are ignored
	if c.MaxOffset() != 256+204 {
		t.Fatalf("MaxOffset %d", c.MaxOffset())
	}
}

func TestDefaultSegmentSize(t *testing.T) {
	c := mustOpen(t, t.TempDir(), Options{})
	if c.SegmentSize() != DefaultSegmentSize {
		t.Fatalf("SegmentSize %d", c.SegmentSize())
	}
	mustAppend(t, c, makeRecords(0, 92))
}

// TestConcurrentReadersDuringAppend runs readers that follow the writer with
// Read and ReadAt while it appends and syncs (run with -race).
func TestConcurrentReadersDuringAppend(t *testing.T) {
	c := mustOpen(t, t.TempDir(), Options{SegmentSize: 4096})
	const total = 2000
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off, seen := int64(0), 0
			for seen < total {
				rec, next, err := c.Read(off)
				if errors.Is(err, io.EOF) {
					runtime.Gosched()
					continue
				}
				if err != nil {
					errc <- err
					return
				}
				if seqOf(rec) != seen {
					errc <- errors.New("records out of order")
					return
				}
				if _, err := c.ReadAt(off, int32(len(rec))); err != nil && !errors.Is(err, ErrOutOfRange) {
					errc <- err
					return
				}
				seen++
				off = next
			}
		}()
	}
	done := make(chan struct{})
	wg.Add(1)
	go func() { // flusher, concurrent with Append
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := c.Sync(); err != nil {
				errc <- err
				return
			}
		}
	}()
	for i := 0; i < total; i += 10 {
		sizes := make([]int, 10)
		for j := range sizes {
			sizes[j] = 36 + (i+j)%200
		}
		mustAppend(t, c, makeRecords(i, sizes...))
	}
	close(done)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if err := c.Sync(); err != nil || c.FlushedOffset() != c.MaxOffset() {
		t.Fatalf("final Sync: %v, flushed %d, max %d", err, c.FlushedOffset(), c.MaxOffset())
	}
}
