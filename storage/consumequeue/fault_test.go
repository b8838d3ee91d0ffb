package consumequeue

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// TestWriteFaultRollsBack fails each pwrite of a batch spanning three files
// and checks the queue is exactly as before.
func TestWriteFaultRollsBack(t *testing.T) {
	for n := 1; ; n++ {
		dir := t.TempDir()
		fs := &vfstest.FaultFS{}
		s := mustOpen(t, dir, Options{UnitsPerFile: 4, FS: fs})
		q := mustQueue(t, s, "T", 0)
		mustAppend(t, q, unitsFrom(0, 2)...)
		fs.FailWrite(n)
		err := q.Append(unitsFrom(2, 8)...)
		if !fs.Hit() {
			if err != nil || n < 4 {
				t.Fatalf("write %d: Append without fault: %v (want 3 writes)", n, err)
			}
			return
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("write %d: Append: %v", n, err)
		}
		files := queueFiles(t, q.dir)
		if q.MaxOffset() != 2 || len(files) != 1 {
			t.Fatalf("write %d: MaxOffset %d files %v after rollback", n, q.MaxOffset(), files)
		}
		if st, err := os.Stat(filepath.Join(q.dir, files[0])); err != nil || st.Size() != 2*UnitSize {
			t.Fatalf("write %d: first file size %v, %v", n, st.Size(), err)
		}
		fs.Reset()
		mustAppend(t, q, unitsFrom(2, 3)...)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = mustOpen(t, dir, Options{UnitsPerFile: 4})
		checkUnits(t, readAll(t, s.Lookup("T", 0)), 5)
	}
}

func TestSyncFaultIsSticky(t *testing.T) {
	fs := &vfstest.FaultFS{}
	s := mustOpen(t, t.TempDir(), Options{UnitsPerFile: 4, FS: fs})
	q := mustQueue(t, s, "T", 0)
	other := mustQueue(t, s, "U", 0)
	mustAppend(t, q, unitsFrom(0, 3)...)
	fs.FailSync(1)
	if err := s.Sync(); !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Store.Sync: %v", err)
	}
	fs.Reset()
	if err := q.Append(unitsFrom(3, 1)...); !errors.Is(err, ErrFailed) {
		t.Fatalf("Append after failed sync: %v", err)
	}
	if err := q.TruncateAbove(0); !errors.Is(err, ErrFailed) {
		t.Fatalf("TruncateAbove after failed sync: %v", err)
	}
	checkUnits(t, readAll(t, q), 3) // reads still work
	mustAppend(t, other, unitsFrom(0, 2)...)
	if err := other.Sync(); err != nil {
		t.Fatalf("other queue: %v", err)
	}
}

// TestDirectorySyncDeferredToSync creates a queue and its first files
// without any directory fsync; Sync makes their entries durable first, and
// a failing directory fsync fails the queue like a failing file fsync.
func TestDirectorySyncDeferredToSync(t *testing.T) {
	fs := &vfstest.FaultFS{}
	s := mustOpen(t, t.TempDir(), Options{UnitsPerFile: 4, FS: fs})
	fs.FailSyncDir(true) // any directory fsync now would fail
	q := mustQueue(t, s, "T", 0)
	mustAppend(t, q, unitsFrom(0, 6)...) // two files
	if fs.Hit() {
		t.Fatal("a directory was fsynced while creating the queue or its files")
	}
	if err := q.Sync(); !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync with failing directory fsyncs: %v, want ErrFailed wrapping EIO", err)
	}
	if q.Failed() == nil {
		t.Fatal("queue not failed after its directory fsync failed")
	}

	fs2 := &vfstest.FaultFS{}
	s2 := mustOpen(t, t.TempDir(), Options{UnitsPerFile: 4, FS: fs2})
	q2 := mustQueue(t, s2, "T", 0)
	mustAppend(t, q2, unitsFrom(0, 6)...)
	if err := q2.Sync(); err != nil {
		t.Fatal(err)
	}
	fs2.FailSyncDir(true)
	mustAppend(t, q2, unitsFrom(6, 1)...) // same file: no new entry
	if err := q2.Sync(); err != nil {
		t.Fatalf("Sync with nothing new in the directories: %v", err)
	}
}
