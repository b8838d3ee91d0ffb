package raftstore

import (
	"errors"
	"math/rand"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage/vfs"
	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
)

// TestStableCrashKeepsOldOrNew: a Set whose file sync is lost, then a
// random crash: the reopened store holds the previous values or the new
// one, never a mix, never an error; acknowledged Sets always survive.
func TestStableCrashKeepsOldOrNew(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	for loop := 0; loop < 200; loop++ {
		cfs := crashfs.New()
		lose := &atomic.Bool{}
		s, err := OpenStable("/ctl", lostSyncFS{cfs, lose})
		if err != nil {
			t.Fatal(err)
		}
		acked := uint64(r.Intn(5))
		for i := uint64(1); i <= acked; i++ {
			if err := s.SetUint64([]byte("CurrentTerm"), i); err != nil {
				t.Fatal(err)
			}
			if err := s.Set([]byte("LastVoteCand"), []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		lose.Store(true)
		if err := s.SetUint64([]byte("CurrentTerm"), 100); err == nil {
			t.Fatal("the lost sync went unreported")
		}
		s2, err := OpenStable("/ctl", cfs.CrashRandom(r))
		if err != nil {
			t.Fatalf("loop %d (seed %d): %v", loop, seed, err)
		}
		term, err := s2.GetUint64([]byte("CurrentTerm"))
		if err != nil || (term != acked && term != 100) {
			t.Fatalf("loop %d (seed %d): CurrentTerm %d %v after the crash, want %d (or 100)", loop, seed, term, err, acked)
		}
		cand, err := s2.Get([]byte("LastVoteCand"))
		if acked == 0 && !errors.Is(err, ErrKeyNotFound) || acked > 0 && (err != nil || cand[0] != byte(acked)) {
			t.Fatalf("loop %d: LastVoteCand %v %v, want %d", loop, cand, err, acked)
		}
	}
}

// TestStableDamage: a damaged raft-stable is an error naming it; the
// temporary file of an interrupted Set is removed at open.
func TestStableDamage(t *testing.T) {
	fs := crashfs.New()
	s, err := OpenStable("/ctl", fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(fs, "/ctl/."+StableFile+".tmp-abc", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStable("/ctl", fs); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat("/ctl/." + StableFile + ".tmp-abc"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale temporary file: %v", err)
	}
	b, _ := vfs.ReadFile(fs, "/ctl/"+StableFile)
	b[len(b)-6] ^= 1
	if err := vfs.WriteFileAtomic(fs, "/ctl/"+StableFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStable("/ctl", fs); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open of a damaged raft-stable = %v, want ErrCorrupt", err)
	}
	if err := s.Set([]byte("k"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUint64([]byte("k")); err == nil {
		t.Fatal("GetUint64 of a 0-byte value gave no error")
	}
}
