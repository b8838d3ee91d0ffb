package consumequeue

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// stallFS is the real file system whose MkdirAll and file ReadAt wait,
// while armed, until the test releases them: a slow disk.
type stallFS struct {
	vfs.OS
	mkdir, read atomic.Bool
	entered     chan string
	release     chan struct{}
	once        sync.Once
}

// openStalled opens a store on a new stallFS. Its stalls end with the test
// at the latest, before the store closes (a failed test must not leave
// them holding the store's locks).
func openStalled(t *testing.T, dir string, opts Options) (*Store, *stallFS) {
	fs := &stallFS{entered: make(chan string, 4), release: make(chan struct{})}
	opts.FS = fs
	s := mustOpen(t, dir, opts)
	t.Cleanup(fs.releaseAll) // runs before mustOpen's Close
	return s, fs
}

// releaseAll lets every stalled operation go on, and later ones run at once.
func (fs *stallFS) releaseAll() {
	fs.mkdir.Store(false)
	fs.read.Store(false)
	fs.once.Do(func() { close(fs.release) })
}

func (fs *stallFS) MkdirAll(dir string, perm os.FileMode) error {
	if fs.mkdir.Load() {
		fs.entered <- "mkdir"
		<-fs.release
	}
	return fs.OS.MkdirAll(dir, perm)
}

func (fs *stallFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := fs.OS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return stallFile{File: f, fs: fs}, nil
}

type stallFile struct {
	vfs.File
	fs *stallFS
}

func (f stallFile) ReadAt(p []byte, off int64) (int, error) {
	if f.fs.read.Load() {
		f.fs.entered <- "read"
		<-f.fs.release
	}
	return f.File.ReadAt(p, off)
}

// waitEntered waits for the stalled operation to begin.
func (fs *stallFS) waitEntered(t *testing.T, what string) {
	t.Helper()
	select {
	case got := <-fs.entered:
		if got != what {
			t.Fatalf("stalled in %s, want %s", got, what)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s began", what)
	}
}

// returnsWhileStalled runs f (what an event loop calls) and fails the test
// if it has not returned after a generous while, during which the stalled
// disk operation is still held, or if it returns an error.
func returnsWhileStalled(t *testing.T, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }() // ends with f
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s waited for the stalled disk operation", what)
	}
}

// TestLookupDoesNotWaitForQueueCreation: creating a queue makes its
// directory outside the map lock, so lookups and queue bounds (called on
// the network event loops) do not wait for a slow MkdirAll.
func TestLookupDoesNotWaitForQueueCreation(t *testing.T) {
	s, fs := openStalled(t, t.TempDir(), Options{})
	q := mustQueue(t, s, "a", 0)
	if err := q.Append(unitsFrom(0, 3)...); err != nil {
		t.Fatal(err)
	}
	fs.mkdir.Store(true)
	created := make(chan error, 1)
	go func() { // ends once the MkdirAll is released
		_, err := s.Queue("b", 0)
		created <- err
	}()
	fs.waitEntered(t, "mkdir")
	returnsWhileStalled(t, "Lookup", func() error {
		if got := s.Lookup("a", 0); got != q || got.MinOffset() != 0 || got.MaxOffset() != 3 {
			return fmt.Errorf("Lookup(a, 0) = %v", got)
		}
		if s.Lookup("b", 0) != nil {
			return errors.New("queue b visible before its directory exists")
		}
		_ = s.Queues()
		return nil
	})
	fs.releaseAll()
	if err := <-created; err != nil {
		t.Fatalf("Queue(b, 0): %v", err)
	}
	if s.Lookup("b", 0) == nil {
		t.Fatal("queue b missing after its creation")
	}
}

// TestMinOffsetDoesNotWaitBehindAReader: a reader holds the file list's
// read lock across its pread and a writer that adds a file waits for it;
// MinOffset takes no lock, so it does not queue behind the writer.
func TestMinOffsetDoesNotWaitBehindAReader(t *testing.T) {
	dir := t.TempDir()
	s, fs := openStalled(t, dir, Options{UnitsPerFile: 4})
	q := mustQueue(t, s, "a", 0)
	if err := q.Append(unitsFrom(0, 4)...); err != nil { // one full file
		t.Fatal(err)
	}
	fs.read.Store(true)
	read := make(chan error, 1)
	go func() { // ends once the ReadAt is released
		_, err := q.Read(0, 1)
		read <- err
	}()
	fs.waitEntered(t, "read")
	fs.read.Store(false)
	appended := make(chan error, 1)
	go func() { // ends once the reader let go of the list
		appended <- q.Append(unitsFrom(4, 1)...) // a second file: the list's write lock
	}()
	second := filepath.Join(dir, "a", "0", fileName(4))
	deadline := time.Now().Add(5 * time.Second)
	for { // the file exists just before the writer takes the lock
		if _, err := os.Stat(second); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not create its file")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let it block on the lock
	returnsWhileStalled(t, "MinOffset", func() error {
		if got := q.MinOffset(); got != 0 {
			return fmt.Errorf("MinOffset = %d, want 0", got)
		}
		return nil
	})
	fs.releaseAll()
	if err := <-read; err != nil {
		t.Fatalf("Read: %v", err)
	}
	if err := <-appended; err != nil {
		t.Fatalf("Append: %v", err)
	}
	if q.MaxOffset() != 5 || q.MinOffset() != 0 {
		t.Fatalf("bounds after: %d..%d", q.MinOffset(), q.MaxOffset())
	}
}
