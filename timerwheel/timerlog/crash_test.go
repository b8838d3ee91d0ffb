package timerlog

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs"
	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// syncModelFS is vfs.OS that remembers what a crash would leave of one
// directory under vfs's durability contract: a file's content as of its
// last Sync, and the directory's entries as of its last SyncDir. crash
// copies that state into a new directory.
type syncModelFS struct {
	vfs.OS
	dir string

	mu      sync.Mutex
	content map[string][]byte // base name -> content at the last Sync
	names   []string          // entries at the last SyncDir of dir
}

func newSyncModelFS(dir string) *syncModelFS {
	return &syncModelFS{dir: dir, content: map[string][]byte{}}
}

func (fs *syncModelFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := fs.OS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &modelFile{File: f, fs: fs, path: name}, nil
}

func (fs *syncModelFS) SyncDir(dir string) error {
	if err := fs.OS.SyncDir(dir); err != nil {
		return err
	}
	if filepath.Clean(dir) != filepath.Clean(fs.dir) {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.names = fs.names[:0]
	for _, e := range ents {
		fs.names = append(fs.names, e.Name())
	}
	return nil
}

// crash returns a new directory holding what survives a crash now: the
// synced entries with their synced content (empty if never synced).
func (fs *syncModelFS) crash(t *testing.T) string {
	t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := t.TempDir()
	for _, name := range fs.names {
		must(t, os.WriteFile(filepath.Join(out, name), fs.content[name], 0o640))
	}
	return out
}

type modelFile struct {
	vfs.File
	fs   *syncModelFS
	path string
}

func (f *modelFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.fs.content[filepath.Base(f.path)] = data
	return nil
}

// TestCrashKeepsSynced runs appends (batches across segment boundaries),
// SyncTo and TruncateFront on a file system that models what a crash
// keeps, and after every step opens what a crash would leave: everything
// SyncTo reported durable is there and reads back, with no hole before it
// (a cycled segment is synced before the next one starts, and a new
// segment's directory entry is synced before its records are reported).
func TestCrashKeepsSynced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "timerlog")
	fs := newSyncModelFS(dir)
	l, _, err := Open(Options{Dir: dir, FS: fs, SegmentSize: testSegSize})
	must(t, err)
	defer l.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	var durable uint64 // last sequence SyncTo reported durable
	check := func(step int) {
		t.Helper()
		cl, rep, err := Open(Options{Dir: fs.crash(t), SegmentSize: testSegSize, MinKeep: durable})
		if err != nil {
			t.Fatalf("step %d: open after crash: %v", step, err)
		}
		defer cl.Close()
		if rep.Missing || cl.Last() < durable || rep.Corrupt != 0 {
			t.Fatalf("step %d: after crash log ends at %d (repair %+v), %d was reported durable", step, cl.Last(), rep, durable)
		}
		for seq := cl.First(); seq <= cl.Last(); seq++ {
			if r, err := cl.Read(seq); err != nil || r.CLOffset != int64(seq)*311 {
				t.Fatalf("step %d: after crash read %d of %d..%d: %+v, %v", step, seq, cl.First(), cl.Last(), r, err)
			}
		}
	}
	check(0)
	for step := 1; step <= 150; step++ {
		switch k := rng.IntN(10); {
		case k < 6:
			n := 1 + rng.IntN(70)
			recs := make([]Record, n)
			for i := range recs {
				recs[i] = testRecord(l.Last()+1+uint64(i), i == n-1)
			}
			must(t, l.Append(recs))
		case k < 9:
			last := l.Last()
			must(t, l.SyncTo(last))
			durable = last
		default:
			if _, err := l.TruncateFront(l.Last() - 100); err != nil {
				t.Fatal(err)
			}
		}
		check(step)
	}
	if n, _ := l.Segments(); n < 3 || l.First() == 1 {
		t.Fatalf("the test did not cycle and truncate segments (%d segments from %d)", n, l.First())
	}
}

// TestFailedWritesAreSticky: after a failed write, segment creation, file
// or directory sync, the log refuses further writes (ErrFailed) and a
// reopen holds what was written before.
func TestFailedWritesAreSticky(t *testing.T) {
	tests := []struct {
		name string
		arm  func(fs *vfstest.FaultFS)
		op   func(l *Log) error // the operation that meets the fault
	}{
		{"write", func(fs *vfstest.FaultFS) { fs.FailWrite(1) }, func(l *Log) error { return appendTest(l, 5) }},
		{"create of the next segment", func(fs *vfstest.FaultFS) { fs.FailCreate(true) }, func(l *Log) error { return appendTest(l, 60) }},
		{"sync of the cycled segment", func(fs *vfstest.FaultFS) { fs.FailSync(1) }, func(l *Log) error { return appendTest(l, 60) }},
		{"sync of the tail", func(fs *vfstest.FaultFS) { fs.FailSync(1) }, func(l *Log) error {
			must(t, appendTest(l, 5))
			return l.SyncTo(l.Last())
		}},
		{"directory sync after a new segment", func(fs *vfstest.FaultFS) { fs.FailSyncDir(true) }, func(l *Log) error {
			must(t, appendTest(l, 60))
			return l.SyncTo(l.Last())
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fs := &vfstest.FaultFS{}
			l, _, err := Open(Options{Dir: dir, FS: fs, SegmentSize: testSegSize})
			must(t, err)
			must(t, appendTest(l, 10))
			must(t, l.SyncTo(l.Last()))
			tc.arm(fs)
			if err := tc.op(l); err == nil || errors.Is(err, ErrFailed) {
				t.Fatalf("faulted operation: %v, want the fault", err)
			}
			if !fs.Hit() {
				t.Fatal("fault not hit")
			}
			fs.Reset()
			if err := appendTest(l, 1); !errors.Is(err, ErrFailed) {
				t.Fatalf("append after the fault: %v, want ErrFailed", err)
			}
			if err := l.SyncTo(l.Last()); !errors.Is(err, ErrFailed) {
				t.Fatalf("sync after the fault: %v, want ErrFailed", err)
			}
			if _, err := l.TruncateFront(l.Last()); !errors.Is(err, ErrFailed) {
				t.Fatalf("truncate after the fault: %v, want ErrFailed", err)
			}
			must(t, l.Close())
			l2, _ := openTest(t, dir, 10)
			if l2.Last() < 10 {
				t.Fatalf("reopen ends at %d, want at least the 10 synced records", l2.Last())
			}
			for seq := uint64(1); seq <= l2.Last(); seq++ {
				if _, err := l2.Read(seq); err != nil {
					t.Fatalf("read %d after reopen: %v", seq, err)
				}
			}
			must(t, appendTest(l2, 3))
		})
	}
}

// appendTest appends n test records as one committed group.
func appendTest(l *Log, n int) error {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = testRecord(l.Last()+1+uint64(i), i == n-1)
	}
	return l.Append(recs)
}
