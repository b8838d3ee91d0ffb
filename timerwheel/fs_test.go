package timerwheel

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// mapFS serves the paths under a root that does not exist from a real
// directory: a store given a Dir under that root works only if every file
// operation goes through the FS (an os call on the path fails).
type mapFS struct {
	virtual, real string
}

func (m mapFS) path(name string) string {
	if rel, ok := strings.CutPrefix(name, m.virtual); ok {
		return m.real + rel
	}
	panic("mapFS: path outside the store: " + name)
}

func (m mapFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	return vfs.OS{}.OpenFile(m.path(name), flag, perm)
}
func (m mapFS) Remove(name string) error    { return os.Remove(m.path(name)) }
func (m mapFS) RemoveAll(name string) error { return os.RemoveAll(m.path(name)) }
func (m mapFS) ReadDir(dir string) ([]os.DirEntry, error) {
	return os.ReadDir(m.path(dir))
}
func (m mapFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(m.path(dir), perm) }
func (m mapFS) SyncDir(dir string) error                    { return vfs.OS{}.SyncDir(m.path(dir)) }
func (m mapFS) Rename(from, to string) error                { return os.Rename(m.path(from), m.path(to)) }
func (m mapFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(m.path(name)) }
func (m mapFS) Lock(name string) (io.Closer, error)         { return vfs.OS{}.Lock(m.path(name)) }

// TestEverythingThroughFS runs a store whose Dir exists only behind
// Options.FS: adds, dequeues, snapshots, segment truncation, a reopen with
// replay, and fsyncs all work, so no file of the store is touched around
// the FS.
func TestEverythingThroughFS(t *testing.T) {
	real := t.TempDir()
	virtual := filepath.Join(string(filepath.Separator), "no-such-root-"+filepath.Base(real))
	if _, err := os.Stat(virtual); !os.IsNotExist(err) {
		t.Fatalf("%s exists", virtual)
	}
	opts := Options{Dir: filepath.Join(virtual, "timer"), FS: mapFS{virtual: virtual, real: real},
		SegmentSize: 64 * 89, SnapshotEvery: 300}
	rng := rand.New(rand.NewPCG(5, 5))
	var next int64
	s, err := Open(opts, T0)
	if err != nil {
		t.Fatal(err)
	}
	added := workload(t, s, rng, &next, 2000, T0, 600_000)
	h := newHarness(t, s)
	h.run(T0, T0+300_000)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"checkpoint", "wheel.snap", "timerlog/00000000000000000001"} {
		if _, err := os.Stat(filepath.Join(real, "timer", name)); err != nil {
			t.Errorf("%s not written through the FS: %v", name, err)
		}
	}
	s2 := openStore(t, opts, T0+300_000)
	if st := s2.Stats(); st.Replayed >= 600 {
		t.Fatalf("replayed %d records with a snapshot every 300: the snapshot was not read", st.Replayed)
	}
	h.s = s2
	h.run(T0+300_000, T0+60*3_600_000)
	got := h.delivered()
	for id := range added {
		if got[id] != 1 {
			t.Fatalf("timer %d delivered %d times", id, got[id])
		}
	}
	if st := s2.Stats(); st.Truncated == 0 {
		t.Fatalf("no TimerLog segment was truncated (stats %+v): the test misses TruncateFront", st)
	}
}
