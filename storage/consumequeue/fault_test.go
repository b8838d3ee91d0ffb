package consumequeue

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// faultFS wraps the real file system and fails chosen file operations.
type faultFS struct {
	osFS
	mu        sync.Mutex
	writes    int // WriteAt calls so far
	failWrite int // 1-based WriteAt call to fail after writing half; 0 = never
	failSync  bool
	hit       bool
}

func (fs *faultFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := fs.osFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{file: f, fs: fs}, nil
}

func (fs *faultFS) set(failWrite int, failSync bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.writes, fs.failWrite, fs.failSync, fs.hit = 0, failWrite, failSync, false
}

func (fs *faultFS) wasHit() bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.hit
}

type faultFile struct {
	file
	fs *faultFS
}

func (f *faultFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	f.fs.writes++
	fail := f.fs.writes == f.fs.failWrite
	f.fs.hit = f.fs.hit || fail
	f.fs.mu.Unlock()
	if fail {
		n, _ := f.file.WriteAt(b[:len(b)/2], off)
		return n, syscall.ENOSPC
	}
	return f.file.WriteAt(b, off)
}

func (f *faultFile) Sync() error {
	f.fs.mu.Lock()
	fail := f.fs.failSync
	f.fs.hit = f.fs.hit || fail
	f.fs.mu.Unlock()
	if fail {
		return syscall.EIO
	}
	return f.file.Sync()
}

// TestWriteFaultRollsBack fails each pwrite of a batch spanning three files
// and checks the queue is exactly as before.
func TestWriteFaultRollsBack(t *testing.T) {
	for n := 1; ; n++ {
		dir := t.TempDir()
		fs := &faultFS{}
		s := mustOpen(t, dir, Options{UnitsPerFile: 4, fs: fs})
		q := mustQueue(t, s, "T", 0)
		mustAppend(t, q, unitsFrom(0, 2)...)
		fs.set(n, false)
		err := q.Append(unitsFrom(2, 8)...)
		if !fs.wasHit() {
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
		fs.set(0, false)
		mustAppend(t, q, unitsFrom(2, 3)...)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = mustOpen(t, dir, Options{UnitsPerFile: 4})
		checkUnits(t, readAll(t, s.Lookup("T", 0)), 5)
	}
}

func TestSyncFaultIsSticky(t *testing.T) {
	fs := &faultFS{}
	s := mustOpen(t, t.TempDir(), Options{UnitsPerFile: 4, fs: fs})
	q := mustQueue(t, s, "T", 0)
	other := mustQueue(t, s, "U", 0)
	mustAppend(t, q, unitsFrom(0, 3)...)
	fs.set(0, true)
	if err := s.Sync(); !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Store.Sync: %v", err)
	}
	fs.set(0, false)
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
