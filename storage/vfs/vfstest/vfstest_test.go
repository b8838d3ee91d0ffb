package vfstest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// ops runs one of each operation FaultFS can fail, in order, and returns
// their errors by name.
func ops(t *testing.T, fs vfs.FS) map[string]error {
	t.Helper()
	dir := t.TempDir()
	out := map[string]error{}
	f, err := fs.OpenFile(filepath.Join(dir, "f"), os.O_RDWR|os.O_CREATE, 0o644)
	out["create"] = err
	if err != nil {
		// Fall back to an uninjected file so the other operations still run.
		if f, err = (vfs.OS{}).OpenFile(filepath.Join(dir, "g"), os.O_RDWR|os.O_CREATE, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	defer f.Close()
	for _, name := range []string{"write1", "write2", "write3"} {
		_, out[name] = f.WriteAt([]byte("abcd"), 0)
	}
	for _, name := range []string{"sync1", "sync2"} {
		out[name] = f.Sync()
	}
	out["truncate"] = f.Truncate(0)
	out["syncdir"] = fs.SyncDir(dir)
	return out
}

func TestFaultFS(t *testing.T) {
	tests := []struct {
		name string
		arm  func(fs *FaultFS)
		fail map[string]error // operations that must fail, with the error
	}{
		{"none", func(*FaultFS) {}, nil},
		{"second write", func(fs *FaultFS) { fs.FailWrite(2) }, map[string]error{"write2": syscall.ENOSPC}},
		{"writes over 3 bytes", func(fs *FaultFS) { fs.FailWritesOver(3) },
			map[string]error{"write1": syscall.ENOSPC, "write2": syscall.ENOSPC, "write3": syscall.ENOSPC}},
		{"writes over 4 bytes", func(fs *FaultFS) { fs.FailWritesOver(4) }, nil},
		{"first sync", func(fs *FaultFS) { fs.FailSync(1) }, map[string]error{"sync1": syscall.EIO}},
		{"create", func(fs *FaultFS) { fs.FailCreate(true) }, map[string]error{"create": syscall.ENOSPC}},
		{"truncate", func(fs *FaultFS) { fs.FailTruncate(true) }, map[string]error{"truncate": syscall.EIO}},
		{"syncdir", func(fs *FaultFS) { fs.FailSyncDir(true) }, map[string]error{"syncdir": syscall.EIO}},
		{"every sync", func(fs *FaultFS) { fs.FailEverySync(true) },
			map[string]error{"sync1": syscall.EIO, "sync2": syscall.EIO}},
		{"full refuses creates", func(fs *FaultFS) { fs.Full(true) }, map[string]error{"create": syscall.ENOSPC}},
		{"armed then reset", func(fs *FaultFS) {
			fs.FailWrite(1)
			fs.FailWritesOver(1)
			fs.PanicSync(1)
			fs.FailSync(1)
			fs.FailCreate(true)
			fs.FailTruncate(true)
			fs.FailSyncDir(true)
			fs.FailEverySync(true)
			fs.Full(true)
			fs.Reset()
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &FaultFS{}
			tt.arm(fs)
			for op, err := range ops(t, fs) {
				want := tt.fail[op]
				if (want == nil) != (err == nil) || (want != nil && !errors.Is(err, want)) {
					t.Errorf("%s: error %v, want %v", op, err, want)
				}
			}
			if fs.Hit() != (len(tt.fail) > 0) {
				t.Errorf("Hit %v with %d faults", fs.Hit(), len(tt.fail))
			}
		})
	}
}

func TestFaultFSWriteFaultWritesHalf(t *testing.T) {
	fs := &FaultFS{}
	path := filepath.Join(t.TempDir(), "f")
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fs.FailWrite(1)
	if n, err := f.WriteAt([]byte("abcdef"), 2); n != 3 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WriteAt: %d, %v; want 3, ENOSPC", n, err)
	}
	if size, _ := f.Size(); size != 5 {
		t.Fatalf("size %d after half write, want 5", size)
	}
	fs.Reset()
	if fs.Hit() {
		t.Fatal("Hit after Reset")
	}
}

// TestFaultFSWritesOver fails only the writes larger than the limit, each
// after writing half of it, and lets smaller ones through.
func TestFaultFSWritesOver(t *testing.T) {
	fs := &FaultFS{}
	f, err := fs.OpenFile(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fs.FailWritesOver(4)
	writes := []struct {
		data string
		n    int
		fail bool
	}{{"abcd", 4, false}, {"abcdef", 3, true}, {"xy", 2, false}, {"abcdefgh", 4, true}}
	for _, w := range writes {
		n, err := f.WriteAt([]byte(w.data), 0)
		if n != w.n || (err != nil) != w.fail || (w.fail && !errors.Is(err, syscall.ENOSPC)) {
			t.Errorf("WriteAt(%q): %d, %v; want %d, failed %v", w.data, n, err, w.n, w.fail)
		}
	}
	fs.FailWritesOver(0)
	if _, err := f.WriteAt([]byte("abcdefgh"), 0); err != nil {
		t.Fatalf("write after disarming: %v", err)
	}
}

// TestFaultFSPanicSync panics in the chosen file Sync only, and leaves the
// FaultFS usable after.
func TestFaultFSPanicSync(t *testing.T) {
	fs := &FaultFS{}
	f, err := fs.OpenFile(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fs.PanicSync(2)
	syncPanics := func() (panicked bool) {
		defer func() { panicked = recover() != nil }()
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		return false
	}
	for i, want := range []bool{false, true, false} {
		if got := syncPanics(); got != want {
			t.Errorf("sync %d panicked %v, want %v", i+1, got, want)
		}
	}
	if !fs.Hit() {
		t.Error("no Hit after the panic")
	}
}

// TestFaultFSFull checks the full-disk mode on a file opened before it:
// every write stores half and fails, reads, truncates and syncs work, and
// turning it off lets writes through again.
func TestFaultFSFull(t *testing.T) {
	fs := &FaultFS{}
	dir := t.TempDir()
	f, err := fs.OpenFile(filepath.Join(dir, "f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fs.Full(true)
	for i := 0; i < 3; i++ {
		if n, err := f.WriteAt([]byte("abcdef"), 0); n != 3 || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("write %d: %d, %v; want 3, ENOSPC", i, n, err)
		}
	}
	if _, err := fs.OpenFile(filepath.Join(dir, "g"), os.O_RDWR|os.O_CREATE, 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("create on a full disk: %v", err)
	}
	got := make([]byte, 3)
	if _, err := f.ReadAt(got, 0); err != nil || string(got) != "abc" {
		t.Fatalf("read %q, %v", got, err)
	}
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	fs.Full(false)
	if _, err := f.WriteAt([]byte("abcdef"), 0); err != nil {
		t.Fatalf("write after the disk has room again: %v", err)
	}
}

// TestFaultFSScope arms every fault but scopes them to one directory:
// files there fail, files elsewhere do not.
func TestFaultFSScope(t *testing.T) {
	fs := &FaultFS{}
	root := t.TempDir()
	in, out := filepath.Join(root, "in"), filepath.Join(root, "inner") // a shared name prefix is not inside
	for _, d := range []string{in, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fin, err := fs.OpenFile(filepath.Join(in, "f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fin.Close()
	fout, err := fs.OpenFile(filepath.Join(out, "f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fout.Close()
	fs.Scope(in)
	fs.Full(true)
	fs.FailEverySync(true)
	fs.FailTruncate(true)
	fs.FailSyncDir(true)
	fs.Reset() // keeps the scope
	fs.Full(true)
	fs.FailEverySync(true)
	fs.FailTruncate(true)
	fs.FailSyncDir(true)
	if _, err := fout.WriteAt([]byte("x"), 0); err != nil {
		t.Errorf("write outside the scope: %v", err)
	}
	if err := fout.Sync(); err != nil {
		t.Errorf("sync outside the scope: %v", err)
	}
	if err := fout.Truncate(0); err != nil {
		t.Errorf("truncate outside the scope: %v", err)
	}
	if err := fs.SyncDir(out); err != nil {
		t.Errorf("sync dir outside the scope: %v", err)
	}
	if fs.Hit() {
		t.Error("Hit without a fault in scope")
	}
	if _, err := fin.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("write inside the scope: %v", err)
	}
	if err := fin.Sync(); !errors.Is(err, syscall.EIO) {
		t.Errorf("sync inside the scope: %v", err)
	}
	if err := fs.SyncDir(in); !errors.Is(err, syscall.EIO) {
		t.Errorf("sync dir inside the scope: %v", err)
	}
}

func TestNoSyncFS(t *testing.T) {
	var fs vfs.FS = NoSyncFS{}
	dir := t.TempDir()
	f, err := fs.OpenFile(filepath.Join(dir, "f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(filepath.Join(dir, "missing")); err != nil {
		t.Fatalf("SyncDir: %v, want no-op", err)
	}
}
