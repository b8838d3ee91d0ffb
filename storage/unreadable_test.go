package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnreadableCommitLogSaysWhatToDo: a CommitLog that cannot be read
// (here a segment whose name is not a multiple of the segment size) is the
// one thing that keeps a store from opening; the error says so and names
// what to run and restore.
func TestUnreadableCommitLogSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	cl := filepath.Join(dir, "commitlog")
	if err := os.MkdirAll(cl, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cl, "00000000000000000007"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := Open(dir, Options{})
	if err == nil {
		_ = st.Close()
		t.Fatal("a store with an unreadable commitlog opened")
	}
	if !errors.Is(err, ErrUnreadable) {
		t.Fatalf("error %v does not wrap ErrUnreadable", err)
	}
	for _, want := range []string{"wheelctl store verify " + dir, "restore " + cl, "backup"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Log(err)
}
