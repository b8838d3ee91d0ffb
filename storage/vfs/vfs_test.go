package vfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestOS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	var fs FS = OS{}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f")
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !os.IsExist(err) {
		t.Fatalf("second exclusive create: %v", err)
	}
	if _, err := f.WriteAt([]byte("world"), 6); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello "), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
		size int64
		data string
	}{
		{"after writes", func() error { return nil }, 11, "hello world"},
		{"truncate down", func() error { return f.Truncate(5) }, 5, "hello"},
		{"truncate up", func() error { return f.Truncate(7) }, 7, "hello\x00\x00"},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		size, err := f.Size()
		if err != nil || size != st.size {
			t.Fatalf("%s: Size %d, %v; want %d", st.name, size, err, st.size)
		}
		buf := make([]byte, size)
		if _, err := f.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, []byte(st.data)) {
			t.Fatalf("%s: ReadAt %q, %v; want %q", st.name, buf, err, st.data)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := fs.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != "f" || !entries[0].Type().IsRegular() {
		t.Fatalf("ReadDir: %v, %v", entries, err)
	}
	if err := fs.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(path); !os.IsNotExist(err) {
		t.Fatalf("SyncDir of a removed path: %v", err)
	}
	top := filepath.Dir(dir)
	if err := fs.RemoveAll(top); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(top); !os.IsNotExist(err) {
		t.Fatalf("after RemoveAll: %v", err)
	}
}
