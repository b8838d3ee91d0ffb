package commitlog

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

func TestReopenRecoversFailedLog(t *testing.T) {
	tests := []struct {
		name string
		// fail puts the log into its failed state (the fault FS is reset
		// afterwards) and returns how many records it still holds.
		fail          func(t *testing.T, c *CommitLog, fs *vfstest.FaultFS) int
		wantTruncated int64 // RecoveryInfo.TruncatedAt after the reopen
	}{
		{"failed fsync", func(t *testing.T, c *CommitLog, fs *vfstest.FaultFS) int {
			fs.FailSync(1)
			if err := c.Sync(); !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("Sync: %v, want ErrFailed and EIO", err)
			}
			return 3
		}, -1},
		{"failed rollback leaves a torn entry", func(t *testing.T, c *CommitLog, fs *vfstest.FaultFS) int {
			fs.FailWrite(1)
			fs.FailTruncate(true)
			if _, err := c.Append(makeRecords(3, 200)); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Append: %v", err)
			}
			return 3
		}, 312}, // 3 entries of 100+4 bytes; the half-written fourth is cut
		{"healthy log", func(*testing.T, *CommitLog, *vfstest.FaultFS) int { return 3 }, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fs := &vfstest.FaultFS{}
			c := mustOpen(t, dir, Options{SegmentSize: 1024, FS: fs})
			mustAppend(t, c, makeRecords(0, 100, 100, 100))
			n := tt.fail(t, c, fs)
			fs.Reset()
			cause := c.Failed()
			if tt.name != "healthy log" {
				if cause == nil {
					t.Fatal("log not failed")
				}
				if _, err := c.Append(makeRecords(n, 100)); !errors.Is(err, ErrFailed) {
					t.Fatalf("Append on a failed log: %v, want ErrFailed", err)
				}
			}
			before := c.MaxOffset()
			info, err := c.Reopen()
			if err != nil {
				t.Fatalf("Reopen: %v", err)
			}
			if info.Cause != cause || info.PreviousMaxOffset != before || info.MaxOffset != c.MaxOffset() || info.Lost() {
				t.Fatalf("reopen info %+v (cause %v, max before %d, now %d)", info, cause, before, c.MaxOffset())
			}
			if info.Recovery.TruncatedAt != tt.wantTruncated {
				t.Fatalf("recovery %+v, want cut at %d", info.Recovery, tt.wantTruncated)
			}
			if err := c.Failed(); err != nil {
				t.Fatalf("still failed after Reopen: %v", err)
			}
			if c.FlushedOffset() != c.MaxOffset() {
				t.Fatalf("flushed %d, max %d after Reopen", c.FlushedOffset(), c.MaxOffset())
			}
			// Writes work again and land after what was kept.
			mustAppend(t, c, makeRecords(n, 100, 300))
			if err := c.Sync(); err != nil {
				t.Fatal(err)
			}
			recs, _ := readAll(t, c)
			checkSeqs(t, recs, n+2)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c = mustOpen(t, dir, Options{SegmentSize: 1024, RecoverFrom: 1})
			if info := c.Recovery(); info.TruncatedAt != -1 {
				t.Fatalf("recovery after reopen and close cut %+v", info)
			}
			recs, _ = readAll(t, c)
			checkSeqs(t, recs, n+2)
		})
	}
}

// TestReopenFailureKeepsLogFailed makes the reopen's own fsync fail: the
// log stays failed and readable, and a later reopen succeeds.
func TestReopenFailureKeepsLogFailed(t *testing.T) {
	fs := &vfstest.FaultFS{}
	c := mustOpen(t, t.TempDir(), Options{SegmentSize: 1024, FS: fs})
	mustAppend(t, c, makeRecords(0, 100, 100))
	fs.FailEverySync(true)
	if err := c.Sync(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Sync: %v", err)
	}
	if _, err := c.Reopen(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Reopen with failing fsync: %v, want EIO", err)
	}
	if !errors.Is(c.Failed(), syscall.EIO) {
		t.Fatalf("Failed after a failed reopen: %v", c.Failed())
	}
	if _, err := c.Append(makeRecords(2, 100)); !errors.Is(err, ErrFailed) {
		t.Fatalf("Append after a failed reopen: %v", err)
	}
	recs, _ := readAll(t, c)
	checkSeqs(t, recs, 2)
	fs.Reset()
	if _, err := c.Reopen(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, makeRecords(2, 100))
	recs, _ = readAll(t, c)
	checkSeqs(t, recs, 3)
}

// TestReopenWithConcurrentReaders reopens the log over and over while
// readers scan it with Read, ReadAt and ReadBlock: no reader may ever see
// an error (a closed file would give one) or a wrong record.
func TestReopenWithConcurrentReaders(t *testing.T) {
	c := mustOpen(t, t.TempDir(), Options{SegmentSize: 512, FS: vfstest.NoSyncFS{}}) // fsync is not under test
	const total = 60
	mustAppend(t, c, makeRecords(0, 100, 100, 100))
	written := atomic.Int64{}
	written.Store(3)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	reader := func(scan func() error) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := scan(); err != nil {
				errs <- err
				return
			}
		}
	}
	readScan := func() error {
		off := c.MinOffset()
		for n := 0; ; n++ {
			rec, next, err := c.Read(off)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if seqOf(rec) != n {
				return errors.New("Read: records out of order")
			}
			at := int64(binary.BigEndian.Uint64(rec[physOffsetPos:])) // past a blank marker when Read skipped one
			if again, err := c.ReadAt(at, int32(len(rec))); err != nil || seqOf(again) != n {
				return errors.Join(errors.New("ReadAt disagrees with Read"), err)
			}
			off = next
		}
	}
	blockScan := func() error {
		off, n := c.MinOffset(), 0
		for {
			recs, _, next, err := c.ReadBlock(off, 300)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			for _, r := range recs {
				if seqOf(r) != n {
					return errors.New("ReadBlock: records out of order")
				}
				n++
			}
			off = next
		}
	}
	wg.Add(2)
	go reader(readScan)
	go reader(blockScan)
	for i := 3; i < total; i++ {
		mustAppend(t, c, makeRecords(i, 36+i*3))
		written.Add(1)
		if _, err := c.Reopen(); err != nil {
			t.Fatalf("Reopen %d: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("reader failed during reopens: %v", err)
	default:
	}
	recs, _ := readAll(t, c)
	checkSeqs(t, recs, int(written.Load()))
}
