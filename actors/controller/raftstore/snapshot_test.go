package raftstore

import (
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/wheelmq/wheelmq/storage/vfs"
	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
)

var testConf = raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: "a", Address: "a"}}}

func writeSnap(t *testing.T, s *SnapshotStore, index, term uint64, state string) string {
	t.Helper()
	k, err := s.Create(1, index, term, testConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(k, state); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	return k.ID()
}

func readSnap(t *testing.T, s *SnapshotStore, id string) (*raft.SnapshotMeta, string) {
	t.Helper()
	m, rc, err := s.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return m, string(b)
}

// TestSnapshotsSurviveCrash: a closed snapshot is listed after a crash, a
// sink not closed (or cancelled) leaves nothing; only retain are kept,
// newest first.
func TestSnapshotsSurviveCrash(t *testing.T) {
	fs := crashfs.New()
	s, err := OpenSnapshots("/ctl", 2, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	writeSnap(t, s, 10, 1, `{"n":10}`)
	id20 := writeSnap(t, s, 20, 1, `{"n":20}`)
	id30 := writeSnap(t, s, 30, 2, `{"n":30}`)
	open, err := s.Create(1, 40, 2, testConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(open, "half")
	cancelled, err := s.Create(1, 50, 2, testConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cancelled.Cancel(); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenSnapshots("/ctl", 2, Options{FS: fs.Crash()})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s2.List()
	if err != nil || len(list) != 2 || list[0].ID != id30 || list[1].ID != id20 {
		t.Fatalf("after the crash: %v %v, want %s then %s", list, err, id30, id20)
	}
	m, state := readSnap(t, s2, id30)
	if state != `{"n":30}` || m.Index != 30 || m.Term != 2 || m.Size != 8 || len(m.Configuration.Servers) != 1 {
		t.Fatalf("snapshot %s: %+v %q", id30, m, state)
	}
	ents, _ := s2.fs.ReadDir("/ctl/" + SnapshotDir)
	if len(ents) != 2 {
		t.Fatalf("%d files in %s after the crash and reopen, want the 2 retained", len(ents), SnapshotDir)
	}
	// A damaged snapshot is refused and left out of List.
	name := filepath.Join("/ctl", SnapshotDir, id30+snapSuffix)
	b, _ := vfs.ReadFile(s2.fs, name)
	b[10] ^= 1
	if err := vfs.WriteFileAtomic(s2.fs, name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.Open(id30); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open of a damaged snapshot = %v, want ErrCorrupt", err)
	}
	if list, _ := s2.List(); len(list) != 1 || list[0].ID != id20 {
		t.Fatalf("list with a damaged snapshot: %v", list)
	}
}
