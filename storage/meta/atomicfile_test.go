package meta

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	for _, content := range []string{"first", "second, longer content", ""} {
		if err := WriteFileAtomic(nil, path, []byte(content)); err != nil {
			t.Fatalf("WriteFileAtomic(nil, %q): %v", content, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("content = %q, %v; want %q", got, err, content)
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o644 {
			t.Fatalf("mode = %v, %v; want 0644", st.Mode(), err)
		}
		noTempFiles(t, dir)
	}
	if n := dirEntries(t, dir); len(n) != 1 {
		t.Fatalf("directory holds %v, want only config.json", n)
	}
}

func TestWriteFileAtomicRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := WriteFileAtomic(nil, "rel.json", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "rel.json")); string(got) != "x" {
		t.Fatalf("content %q", got)
	}
}

func TestWriteFileAtomicFailures(t *testing.T) {
	dir := t.TempDir()
	// The target is a non-empty directory: rename fails after the temp
	// file was written, which must be cleaned up.
	target := filepath.Join(dir, "target")
	if err := os.MkdirAll(filepath.Join(target, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(nil, target, []byte("data")); err == nil {
		t.Fatal("WriteFileAtomic over a directory succeeded")
	}
	noTempFiles(t, dir)
	// Missing directory.
	if err := WriteFileAtomic(nil, filepath.Join(dir, "missing", "f"), []byte("x")); err == nil {
		t.Fatal("WriteFileAtomic into a missing directory succeeded")
	}
}
