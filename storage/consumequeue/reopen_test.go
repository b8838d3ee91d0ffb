package consumequeue

import (
	"errors"
	"sync"
	"syscall"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

func TestQueueReopen(t *testing.T) {
	tests := []struct {
		name string
		// fail puts q into its failed state and returns the units it keeps.
		fail func(t *testing.T, s *Store, q *Queue, fs *vfstest.FaultFS) int
	}{
		{"failed fsync", func(t *testing.T, s *Store, q *Queue, fs *vfstest.FaultFS) int {
			fs.FailSync(1)
			if err := s.Sync(); !errors.Is(err, ErrFailed) {
				t.Fatalf("Sync: %v", err)
			}
			return 6
		}},
		{"failed rollback leaves a partial unit", func(t *testing.T, _ *Store, q *Queue, fs *vfstest.FaultFS) int {
			fs.FailWrite(1)
			fs.FailTruncate(true)
			if err := q.Append(unitsFrom(6, 1)...); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Append: %v", err)
			}
			return 6
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fs := &vfstest.FaultFS{}
			s := mustOpen(t, dir, Options{UnitsPerFile: 4, FS: fs})
			q := mustQueue(t, s, "T", 0)
			mustAppend(t, q, unitsFrom(0, 6)...)
			keep := tt.fail(t, s, q, fs)
			fs.Reset()
			if q.Failed() == nil {
				t.Fatal("queue not failed")
			}
			if got := s.FailedQueues(); len(got) != 1 || got[0] != q {
				t.Fatalf("FailedQueues %v", got)
			}
			before, after, err := q.Reopen()
			if err != nil {
				t.Fatal(err)
			}
			if before != 6 || after != int64(keep) || q.MaxOffset() != after {
				t.Fatalf("reopen %d -> %d, MaxOffset %d; want 6 -> %d", before, after, q.MaxOffset(), keep)
			}
			if q.Failed() != nil || len(s.FailedQueues()) != 0 {
				t.Fatalf("still failed: %v", q.Failed())
			}
			// The ordering check survives the reopen: an old unit is refused.
			if err := q.Append(unitsFrom(2, 1)...); !errors.Is(err, ErrInvalidUnit) {
				t.Fatalf("Append of an old unit after reopen: %v", err)
			}
			mustAppend(t, q, unitsFrom(keep, 3)...)
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			checkUnits(t, readAll(t, q), keep+3)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, dir, Options{UnitsPerFile: 4})
			checkUnits(t, readAll(t, s.Lookup("T", 0)), keep+3)
		})
	}
}

func TestQueueReopenFailureKeepsQueueFailed(t *testing.T) {
	fs := &vfstest.FaultFS{}
	s := mustOpen(t, t.TempDir(), Options{UnitsPerFile: 4, FS: fs})
	q := mustQueue(t, s, "T", 0)
	mustAppend(t, q, unitsFrom(0, 3)...)
	fs.FailWrite(1)
	fs.FailTruncate(true) // the rollback fails: sticky, and a partial unit stays
	if err := q.Append(unitsFrom(3, 1)...); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append: %v", err)
	}
	fs.Reset()
	fs.FailTruncate(true) // recovery cannot cut the partial unit either
	if _, _, err := q.Reopen(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Reopen: %v, want EIO", err)
	}
	if q.Failed() == nil {
		t.Fatal("queue no longer failed after a failed reopen")
	}
	checkUnits(t, readAll(t, q), 3)
	fs.Reset()
	if _, _, err := q.Reopen(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, q, unitsFrom(3, 1)...)
	checkUnits(t, readAll(t, q), 4)
}

// TestQueueReopenWithConcurrentReaders reopens a queue over and over while
// readers read it: none may see an error or a wrong unit.
func TestQueueReopenWithConcurrentReaders(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{UnitsPerFile: 4, FS: vfstest.NoSyncFS{}})
	q := mustQueue(t, s, "T", 0)
	mustAppend(t, q, unitsFrom(0, 2)...)
	stop := make(chan struct{})
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				max := q.MaxOffset()
				got, err := q.Read(0, int(max))
				if err == nil && int64(len(got)) != max {
					err = errors.New("short read")
				}
				for i, u := range got {
					if err == nil && u != unitsFrom(i, 1)[0] {
						err = errors.New("wrong unit")
					}
				}
				if _, serr := q.SearchByPhysOffset(100); err == nil {
					err = serr
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 2; i < 60; i++ {
		mustAppend(t, q, unitsFrom(i, 1)...)
		if _, _, err := q.Reopen(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("reader failed during reopens: %v", err)
	default:
	}
	checkUnits(t, readAll(t, q), 60)
}
