package commitlog

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// TestDeleteOldest deletes head segments of a log of 256-byte segments
// holding one 100-byte record (104-byte entry) each after the first two,
// and checks what goes, what stays and that the log keeps working.
func TestDeleteOldest(t *testing.T) {
	tests := []struct {
		name      string
		sizes     []int   // records appended; two 100s and a blank fill a segment
		limits    []int64 // successive DeleteOldest calls
		wantGone  int     // segments deleted in total
		wantMin   int64
		wantFiles int
	}{
		{"limit inside the first segment", []int{100, 100, 100, 100, 100}, []int64{255}, 0, 0, 3},
		{"limit at the first segment end", []int{100, 100, 100, 100, 100}, []int64{256}, 1, 256, 2},
		{"one segment per call", []int{100, 100, 100, 100, 100}, []int64{1 << 40, 1 << 40}, 2, 512, 1},
		{"never the last segment", []int{100, 100, 100, 100, 100}, []int64{1 << 40, 1 << 40, 1 << 40}, 2, 512, 1},
		{"never the segment being written when full", []int{100, 100, 100, 100, 124, 124}, []int64{1 << 40, 1 << 40, 1 << 40}, 2, 512, 1},
		{"single segment", []int{100}, []int64{1 << 40}, 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := mustOpen(t, dir, Options{SegmentSize: 256})
			offs := mustAppend(t, c, makeRecords(0, tt.sizes...))
			gone := 0
			for _, lim := range tt.limits {
				info, ok, err := c.DeleteOldest(lim)
				if err != nil {
					t.Fatalf("DeleteOldest(%d): %v", lim, err)
				}
				if ok {
					gone++
					if info.End != info.Base+256 || info.Size == 0 {
						t.Fatalf("deleted %+v", info)
					}
				}
			}
			if gone != tt.wantGone || c.MinOffset() != tt.wantMin || len(segmentFiles(t, dir)) != tt.wantFiles {
				t.Fatalf("deleted %d, min %d, %d files; want %d, %d, %d", gone, c.MinOffset(),
					len(segmentFiles(t, dir)), tt.wantGone, tt.wantMin, tt.wantFiles)
			}
			got := c.Segments()
			if len(got) != tt.wantFiles || got[0].Base != tt.wantMin {
				t.Fatalf("Segments() = %+v", got)
			}
			if mt, err := got[0].ModTime(); err != nil || mt.IsZero() {
				t.Fatalf("ModTime: %v %v", mt, err)
			}
			// Deleted records are out of range, kept ones readable.
			kept := 0
			for i, off := range offs {
				_, err := c.ReadAt(off, int32(tt.sizes[i]))
				switch {
				case off < tt.wantMin && !errors.Is(err, ErrOutOfRange):
					t.Fatalf("ReadAt(%d) of a deleted record: %v", off, err)
				case off >= tt.wantMin && err != nil:
					t.Fatalf("ReadAt(%d) of a kept record: %v", off, err)
				case off >= tt.wantMin:
					kept++
				}
			}
			recs, _ := readAll(t, c)
			if len(recs) != kept {
				t.Fatalf("Read from MinOffset gave %d records, want %d", len(recs), kept)
			}
			// Appends go on, and a reopened log starts at the same minimum.
			mustAppend(t, c, makeRecords(len(tt.sizes), 100, 100, 100))
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c = mustOpen(t, dir, Options{SegmentSize: 256})
			if c.MinOffset() != tt.wantMin {
				t.Fatalf("MinOffset after reopen %d, want %d", c.MinOffset(), tt.wantMin)
			}
			recs, _ = readAll(t, c)
			if len(recs) != kept+3 {
				t.Fatalf("after reopen %d records, want %d", len(recs), kept+3)
			}
		})
	}
}

// TestRollbackAfterHeadDeletion fails a write of a batch that spans new
// segments after head segments were deleted: the rollback must remove
// exactly the segments the batch created.
func TestRollbackAfterHeadDeletion(t *testing.T) {
	dir := t.TempDir()
	fs := &vfstest.FaultFS{}
	c := mustOpen(t, dir, Options{SegmentSize: 256, FS: fs})
	mustAppend(t, c, makeRecords(0, 100, 100, 100, 100, 100, 100, 100))
	for i := 0; i < 2; i++ {
		if _, ok, err := c.DeleteOldest(1 << 40); !ok || err != nil {
			t.Fatalf("DeleteOldest: %v %v", ok, err)
		}
	}
	before, max := snapshotSizes(t, dir), c.MaxOffset()
	fs.FailWrite(3)
	if _, err := c.Append(makeRecords(7, 100, 100, 100, 100)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append: %v, want ENOSPC", err)
	}
	if after := snapshotSizes(t, dir); !sameSizes(before, after) || c.MaxOffset() != max {
		t.Fatalf("after rollback files %v max %d, want %v max %d", after, c.MaxOffset(), before, max)
	}
	fs.Reset()
	mustAppend(t, c, makeRecords(7, 100))
	recs, _ := readAll(t, c)
	if len(recs) != 4 || seqOf(recs[0]) != 4 || seqOf(recs[3]) != 7 {
		t.Fatalf("records after rollback: %d, first seq %d", len(recs), seqOf(recs[0]))
	}
}

// TestDeleteOldestCrashHalfway leaves the log as a crash between two
// deletions does (the first segment gone, the second not) and reopens it.
func TestDeleteOldestCrashHalfway(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{SegmentSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, makeRecords(0, 100, 100, 100, 100, 100, 100, 100))
	if _, ok, err := c.DeleteOldest(768); !ok || err != nil {
		t.Fatalf("DeleteOldest: %v %v", ok, err)
	}
	// No Close: the process dies here, before deleting segment 256.
	c2 := mustOpen(t, dir, Options{SegmentSize: 256})
	if c2.MinOffset() != 256 || c2.MaxOffset() != c.MaxOffset() {
		t.Fatalf("reopened min %d max %d, want 256 %d", c2.MinOffset(), c2.MaxOffset(), c.MaxOffset())
	}
	recs, _ := readAll(t, c2)
	if len(recs) != 5 || seqOf(recs[0]) != 2 {
		t.Fatalf("reopened: %d records from seq %d", len(recs), seqOf(recs[0]))
	}
	_ = c.Close()
}

// TestDeleteOldestWithReaders deletes head segments while readers read
// every record in a loop: a read either succeeds or reports ErrOutOfRange
// for a deleted record, never a closed file. Run with -race.
func TestDeleteOldestWithReaders(t *testing.T) {
	c := mustOpen(t, t.TempDir(), Options{SegmentSize: 256})
	offs := mustAppend(t, c, makeRecords(0, repeat(100, 40)...))
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for r := 0; r < 4; r++ {
		go func() {
			for {
				for _, off := range offs {
					select {
					case <-stop:
						errs <- nil
						return
					default:
					}
					if _, err := c.ReadAt(off, 100); err != nil && !errors.Is(err, ErrOutOfRange) {
						errs <- err
						return
					}
				}
			}
		}()
	}
	for {
		_, ok, err := c.DeleteOldest(1 << 40)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
	}
	close(stop)
	for r := 0; r < 4; r++ {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("reader: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a reader did not stop")
		}
	}
	if n := len(c.Segments()); n != 1 {
		t.Fatalf("%d segments left", n)
	}
}
