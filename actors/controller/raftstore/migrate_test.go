package raftstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// boltDir writes a raft.db as an earlier wheelmq left it: entries 11..60
// (1..10 compacted), a term and a vote. It returns the same calls made on
// an InmemStore, the expected outcome.
func boltDir(t *testing.T) (string, *raft.InmemStore) {
	t.Helper()
	dir := t.TempDir()
	b, err := raftboltdb.NewBoltStore(filepath.Join(dir, BoltFile))
	if err != nil {
		t.Fatal(err)
	}
	want := raft.NewInmemStore()
	for _, s := range []raft.LogStore{b, want} {
		if err := s.StoreLogs(entries(1, 60, 2)); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteRange(1, 10); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SetUint64([]byte("CurrentTerm"), 5); err != nil {
		t.Fatal(err)
	}
	if err := b.SetUint64([]byte("LastVoteTerm"), 4); err != nil {
		t.Fatal(err)
	}
	if err := b.Set([]byte("LastVoteCand"), []byte("127.0.0.1:9001")); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	fss, err := raft.NewFileSnapshotStore(filepath.Join(dir, FileSnapshotDir), 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport("a") // FileSnapshotStore encodes the peers with it
	defer trans.Close()
	for _, idx := range []uint64{5, 10} {
		sink, err := fss.Create(1, idx, 2, testConf, 1, trans)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(sink, `{"upTo":%d}`, idx); err != nil {
			t.Fatal(err)
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dir, want
}

func checkMigrated(t *testing.T, dir string, want *raft.InmemStore) {
	t.Helper()
	l, err := OpenLog(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got, w := dump(t, l), dump(t, want); got != w {
		t.Fatalf("migrated log\n got %s\nwant %s", got, w)
	}
	var e raft.Log
	if err := l.GetLog(30, &e); err != nil || e.AppendedAt.UnixNano() != 1700000000_000000030 {
		t.Fatalf("entry 30: %+v %v (AppendedAt must survive)", e, err)
	}
	s, err := OpenStable(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	term, err1 := s.GetUint64([]byte("CurrentTerm"))
	vt, err2 := s.GetUint64([]byte("LastVoteTerm"))
	cand, err3 := s.Get([]byte("LastVoteCand"))
	if term != 5 || vt != 4 || string(cand) != "127.0.0.1:9001" || errors.Join(err1, err2, err3) != nil {
		t.Fatalf("stable: term %d vote term %d cand %q (%v %v %v)", term, vt, cand, err1, err2, err3)
	}
	snaps, err := OpenSnapshots(dir, 2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	list, _ := snaps.List()
	if len(list) != 1 {
		t.Fatalf("%d snapshots migrated, want the newest", len(list))
	}
	if m, state := readSnap(t, snaps, list[0].ID); m.Index != 10 || m.Term != 2 || state != `{"upTo":10}` {
		t.Fatalf("migrated snapshot %+v %q", m, state)
	}
	if _, err := os.Stat(filepath.Join(dir, BoltFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("raft.db still in place: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, BoltMigratedFile)); err != nil {
		t.Fatalf("no %s: %v", BoltMigratedFile, err)
	}
}

// TestMigrateBolt: a raft.db made by raft-boltdb is converted once; the
// second call finds nothing to do.
func TestMigrateBolt(t *testing.T) {
	dir, want := boltDir(t)
	done, err := MigrateBolt(dir, nil, zerolog.Nop())
	if err != nil || !done {
		t.Fatalf("MigrateBolt = %v %v", done, err)
	}
	checkMigrated(t, dir, want)
	if done, err := MigrateBolt(dir, nil, zerolog.Nop()); err != nil || done {
		t.Fatalf("second MigrateBolt = %v %v, want nothing done", done, err)
	}
	checkMigrated(t, dir, want)
}

// TestMigrateBoltInterrupted: new files left next to raft.db by a
// conversion that did not finish are replaced by a fresh conversion.
func TestMigrateBoltInterrupted(t *testing.T) {
	dir, want := boltDir(t)
	l, err := OpenLog(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.StoreLogs(entries(11, 12, 9)); err != nil { // half a conversion, a wrong term
		t.Fatal(err)
	}
	_ = l.Close()
	if err := vfs.WriteFileAtomic(nil, filepath.Join(dir, StableFile), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if done, err := MigrateBolt(dir, nil, zerolog.Nop()); err != nil || !done {
		t.Fatalf("MigrateBolt = %v %v", done, err)
	}
	checkMigrated(t, dir, want)
}

// TestMigrateEmptyBolt: a zero-length raft.db (raft-boltdb cut before its
// first write) is moved aside; the new store starts empty.
func TestMigrateEmptyBolt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, BoltFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if done, err := MigrateBolt(dir, nil, zerolog.Nop()); err != nil || !done {
		t.Fatalf("MigrateBolt = %v %v", done, err)
	}
	l, err := OpenLog(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if last, _ := l.LastIndex(); last != 0 {
		t.Fatalf("last index %d, want an empty log", last)
	}
	if _, err := os.Stat(filepath.Join(dir, BoltMigratedFile)); err != nil {
		t.Fatal(err)
	}
}
