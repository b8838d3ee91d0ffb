package commitlog

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// snapshotSizes returns the size of every segment file in dir.
func snapshotSizes(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, n := range segmentFiles(t, dir) {
		out[n] = fileSize(t, filepath.Join(dir, n))
	}
	return out
}

func sameSizes(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestWriteFaultRollsBack fails the Nth pwrite of a batch that spans three
// segments, for every N, and checks the log is exactly as before the batch.
func TestWriteFaultRollsBack(t *testing.T) {
	for n := 1; ; n++ {
		dir := t.TempDir()
		fs := &vfstest.FaultFS{}
		c := mustOpen(t, dir, Options{SegmentSize: 256, FS: fs})
		mustAppend(t, c, makeRecords(0, 100))
		before, max := snapshotSizes(t, dir), c.MaxOffset()

		fs.FailWrite(n)
		_, err := c.Append(makeRecords(1, 100, 100, 100, 100))
		if !fs.Hit() {
			if err != nil {
				t.Fatalf("write %d: Append without fault: %v", n, err)
			}
			if n < 3 {
				t.Fatalf("batch used only %d writes, want 3 (one per segment)", n-1)
			}
			return
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("write %d: Append error %v, want ENOSPC", n, err)
		}
		if c.MaxOffset() != max {
			t.Fatalf("write %d: MaxOffset %d after failed append, want %d", n, c.MaxOffset(), max)
		}
		if after := snapshotSizes(t, dir); !sameSizes(before, after) {
			t.Fatalf("write %d: files %v after rollback, want %v", n, after, before)
		}
		fs.Reset()
		mustAppend(t, c, makeRecords(1, 100, 100))
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		c = mustOpen(t, dir, Options{SegmentSize: 256, RecoverFrom: 1})
		if info := c.Recovery(); info.TruncatedAt != -1 {
			t.Fatalf("write %d: recovery after rollback cut %+v", n, info)
		}
		recs, _ := readAll(t, c)
		checkSeqs(t, recs, 3)
	}
}

func TestSegmentCreateFault(t *testing.T) {
	tests := []struct {
		name   string
		inject func(fs *vfstest.FaultFS)
		want   error
	}{
		{"create fails", func(fs *vfstest.FaultFS) { fs.FailCreate(true) }, syscall.ENOSPC},
		{"directory sync fails", func(fs *vfstest.FaultFS) { fs.FailSyncDir(true) }, syscall.EIO},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fs := &vfstest.FaultFS{}
			c := mustOpen(t, dir, Options{SegmentSize: 256, FS: fs})
			mustAppend(t, c, makeRecords(0, 100, 100))
			before := snapshotSizes(t, dir)
			tt.inject(fs)
			if _, err := c.Append(makeRecords(2, 100)); !errors.Is(err, tt.want) {
				t.Fatalf("Append: %v, want %v", err, tt.want)
			}
			if after := snapshotSizes(t, dir); !sameSizes(before, after) {
				t.Fatalf("files %v, want %v", after, before)
			}
			fs.Reset()
			mustAppend(t, c, makeRecords(2, 100))
			recs, _ := readAll(t, c)
			checkSeqs(t, recs, 3)
		})
	}
}

func TestSyncFaultIsSticky(t *testing.T) {
	dir := t.TempDir()
	fs := &vfstest.FaultFS{}
	c, err := Open(dir, Options{SegmentSize: 256, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, makeRecords(0, 100, 100, 100))
	fs.FailSync(1)
	if err := c.Sync(); !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync: %v, want ErrFailed and EIO", err)
	}
	if c.FlushedOffset() != 0 {
		t.Fatalf("FlushedOffset %d after failed sync", c.FlushedOffset())
	}
	if _, err := c.Append(makeRecords(3, 100)); !errors.Is(err, ErrFailed) {
		t.Fatalf("Append after failed sync: %v", err)
	}
	if err := c.Sync(); !errors.Is(err, ErrFailed) {
		t.Fatalf("second Sync: %v", err)
	}
	recs, _ := readAll(t, c) // reads still work
	checkSeqs(t, recs, 3)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = mustOpen(t, dir, Options{SegmentSize: 256, RecoverFrom: 1})
	recs, _ = readAll(t, c)
	checkSeqs(t, recs, 3)
	mustAppend(t, c, makeRecords(3, 100))
}

func TestRollbackFaultIsSticky(t *testing.T) {
	dir := t.TempDir()
	fs := &vfstest.FaultFS{}
	c, err := Open(dir, Options{SegmentSize: 1024, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, makeRecords(0, 100))
	fs.FailWrite(1)
	fs.FailTruncate(true)
	if _, err := c.Append(makeRecords(1, 200)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append: %v", err)
	}
	fs.Reset()
	if _, err := c.Append(makeRecords(1, 100)); !errors.Is(err, ErrFailed) {
		t.Fatalf("Append after failed rollback: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// The half-written entry is still on disk; recovery cuts it.
	c = mustOpen(t, dir, Options{SegmentSize: 1024})
	if info := c.Recovery(); info.TruncatedAt != 104 || info.TruncatedBytes != 102 {
		t.Fatalf("recovery %+v, want cut at 104 of 102 bytes", info)
	}
	recs, _ := readAll(t, c)
	checkSeqs(t, recs, 1)
}

// TestCrashKeepsSyncedPrefix simulates crashes that lose or garble any
// unsynced bytes and checks that recovery (from the flushed offset) keeps a
// prefix of the written records that contains every synced one.
func TestCrashKeepsSyncedPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 20; round++ {
		dir := t.TempDir()
		c := mustOpen(t, dir, Options{SegmentSize: 512})
		var sizes []int
		for b := rng.IntN(12); b >= 0; b-- {
			batch := make([]int, 1+rng.IntN(5))
			for i := range batch {
				batch[i] = 36 + rng.IntN(200)
			}
			mustAppend(t, c, makeRecords(len(sizes), batch...))
			sizes = append(sizes, batch...)
			if rng.IntN(3) == 0 {
				if err := c.Sync(); err != nil {
					t.Fatal(err)
				}
			}
		}
		flushed := c.FlushedOffset()
		synced := 0
		for _, off := range recordOffsets(t, c) {
			if off < flushed {
				synced++
			}
		}
		crash := crashClone(t, dir, flushed, 512, rng)
		c2 := mustOpen(t, crash, Options{SegmentSize: 512, RecoverFrom: max(flushed, 1)})
		recs, _ := readAll(t, c2)
		if len(recs) < synced || len(recs) > len(sizes) {
			t.Fatalf("round %d: %d records after crash, synced %d, written %d", round, len(recs), synced, len(sizes))
		}
		checkSeqs(t, recs, len(recs))
		mustAppend(t, c2, makeRecords(len(recs), 100))
	}
}

// recordOffsets returns the offsets of all records.
func recordOffsets(t *testing.T, c *CommitLog) []int64 {
	_, offs := readAll(t, c)
	return offs
}

// crashClone copies the segment files of dir into a new directory as a crash
// might leave them: bytes below flushed survive; each unsynced segment tail
// is kept, cut at a random point, garbled or lost. Segment files are created
// with a directory fsync, so only the newest one may vanish.
func crashClone(t *testing.T, dir string, flushed, segSize int64, rng *rand.Rand) string {
	t.Helper()
	out := t.TempDir()
	names := segmentFiles(t, dir)
	for _, name := range names {
		base, _ := parseSegmentName(name)
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		keep := max(flushed-base, 0)
		if keep < int64(len(data)) {
			switch rng.IntN(4) {
			case 0: // all unsynced bytes made it
			case 1: // cut somewhere in the unsynced part
				data = data[:keep+rng.Int64N(int64(len(data))-keep+1)]
			case 2: // garbage over the unsynced part
				for i := keep + rng.Int64N(int64(len(data))-keep); i < int64(len(data)); i++ {
					data[i] = byte(rng.Uint32())
				}
			case 3: // nothing unsynced made it; the last file may vanish
				if name == names[len(names)-1] && base >= flushed && base > 0 {
					continue
				}
				data = data[:keep]
			}
		}
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
