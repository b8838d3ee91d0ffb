package checkpoint

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

var geo = Geometry{SlotMs: 10, NearSlots: 131072, FarSlotMs: 600000, FarSlots: 52562, CancelWindowMs: 1000}

func sampleCheckpoint() Checkpoint {
	return Checkpoint{Counter: 7, AckedMs: 1700000000123, AckedSeq: 4242, FlushedSeq: 5000, SnapshotSeq: 4096,
		RelinkedUpToMs: 1700000400000, EnqueueQueueOffset: 4999, Geometry: geo}
}

func sampleSnapshot() *Snapshot {
	return &Snapshot{Version: SnapshotVersion, Seq: 4096, AckedMs: 1700000000123, AckedSeq: 4000,
		RelinkedUpToMs: 1700000400000, EnqueueQueueOffset: 4095, Geometry: geo,
		Near: []Slot{{No: 170000000012, Head: 4090, First: 4001, N: 12, NC: 1, MinCLOffset: 88000}},
		Far: []Slot{{No: 2833334, Head: 4096, First: 17, N: 300, NC: 0, MinCLOffset: 0},
			{No: 2886000, Head: 99, First: 99, N: 1, MinCLOffset: math.MaxInt64}},
		Segments: []Segment{{First: 1, MinCLOffset: 0}, {First: 2000, MinCLOffset: 123456}}}
}

func TestCheckpointRoundTripAndRejects(t *testing.T) {
	c := sampleCheckpoint()
	b := c.Encode()
	got, err := Decode(b)
	if err != nil || got != c {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"short", b[:Size-1]},
		{"flip", func() []byte { x := bytes.Clone(b); x[20] ^= 1; return x }()},
		{"zero", make([]byte, Size)},
	} {
		if _, err := Decode(tc.b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", tc.name, err)
		}
	}
}

func TestFileAlternatesAndSurvivesTornCopy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint")
	f, err := Open(vfs.OS{}, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Latest(); ok {
		t.Fatal("new file has a checkpoint")
	}
	for i := int64(1); i <= 3; i++ {
		c := sampleCheckpoint()
		c.AckedMs = i
		if err := f.Write(c); err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := f.Latest(); c.AckedMs != 3 || c.Counter != 3 {
		t.Fatalf("latest %+v", c)
	}
	if c, _ := f.Previous(); c.AckedMs != 2 {
		t.Fatalf("previous %+v", c)
	}
	_ = f.Close()
	// Tear the latest copy (counter 3 lives at copy 1).
	raw, _ := os.ReadFile(path)
	raw[copyStride+30] ^= 0xff
	if err := os.WriteFile(path, raw, 0o640); err != nil {
		t.Fatal(err)
	}
	f, err = Open(vfs.OS{}, path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if c, ok := f.Latest(); !ok || c.AckedMs != 2 {
		t.Fatalf("after torn latest: %+v %v", c, ok)
	}
	if err := f.Write(sampleCheckpoint()); err != nil {
		t.Fatal(err)
	}
	if c, _ := f.Latest(); c.Counter != 3 || c.AckedMs != sampleCheckpoint().AckedMs {
		t.Fatalf("write after torn: %+v", c)
	}
}

func TestSnapshotRoundTripAndAtomicWrite(t *testing.T) {
	s := sampleSnapshot()
	path := filepath.Join(t.TempDir(), "wheel.snap")
	if got, err := ReadSnapshot(vfs.OS{}, path); got != nil || err != nil {
		t.Fatalf("missing snapshot: %v %v", got, err)
	}
	if err := WriteSnapshot(vfs.OS{}, path, EncodeSnapshot(s), true); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSnapshot(vfs.OS{}, path)
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	b := EncodeSnapshot(s)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"short", b[:50]},
		{"truncated", b[:len(b)-1]},
		{"magic", func() []byte { x := bytes.Clone(b); x[0] = 'X'; return x }()},
		{"count", func() []byte { x := bytes.Clone(b); x[99]++; return x }()},
		{"flip", func() []byte { x := bytes.Clone(b); x[120] ^= 4; return x }()},
	} {
		if _, err := DecodeSnapshot(tc.b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", tc.name, err)
		}
	}
}

func TestGolden(t *testing.T) {
	c := sampleCheckpoint()
	var out bytes.Buffer
	out.WriteString("# checkpoint copy, version 1\n")
	out.WriteString(hex.Dump(c.Encode()))
	out.WriteString("\n# wheel snapshot, version 2 (1 near slot, 2 far slots, 2 segments)\n")
	out.WriteString(hex.Dump(EncodeSnapshot(sampleSnapshot())))
	out.WriteString("\n# wheel snapshot, version 1 (the same without the slots' min CommitLog offsets)\n")
	out.WriteString(hex.Dump(encodeSnapshot(sampleSnapshot(), 1)))
	path := filepath.Join("testdata", "formats.golden")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(want, out.Bytes()) {
		t.Fatalf("encoding differs from %s:\n%s", path, out.String())
	}
}

func FuzzDecodeCheckpoint(f *testing.F) {
	c := sampleCheckpoint()
	f.Add(c.Encode())
	f.Add(make([]byte, Size))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatal(err)
			}
			return
		}
		if !bytes.Equal(c.Encode(), b) {
			t.Fatal("re-encode differs")
		}
	})
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(EncodeSnapshot(sampleSnapshot()))
	f.Add(EncodeSnapshot(&Snapshot{}))
	f.Add([]byte(SnapshotMagic))
	f.Add(encodeSnapshot(sampleSnapshot(), 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatal(err)
			}
			return
		}
		if !bytes.Equal(encodeSnapshot(s, s.Version), b) {
			t.Fatal("re-encode differs")
		}
	})
}

// TestSnapshotVersion1 reads a version 1 snapshot: the slots' minimum
// CommitLog offsets are unknown, everything else is kept.
func TestSnapshotVersion1(t *testing.T) {
	want := sampleSnapshot()
	got, err := DecodeSnapshot(encodeSnapshot(want, 1))
	if err != nil {
		t.Fatal(err)
	}
	want.Version = 1
	for _, sl := range [][]Slot{want.Near, want.Far} {
		for i := range sl {
			sl[i].MinCLOffset = MinCLUnknown
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("version 1: %+v, want %+v", got, want)
	}
	b := encodeSnapshot(want, 3)
	b[8] = 3
	if _, err := DecodeSnapshot(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("version 3: %v", err)
	}
}

// recordFS is vfs.OS that logs the operations that change or sync files,
// with paths relative to dir.
type recordFS struct {
	vfs.OS
	dir string
	mu  sync.Mutex
	ops []string
}

func (fs *recordFS) log(op, path string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	rel, _ := filepath.Rel(fs.dir, path)
	fs.ops = append(fs.ops, op+" "+rel)
}

func (fs *recordFS) take() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	ops := fs.ops
	fs.ops = nil
	return ops
}

func (fs *recordFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := fs.OS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if flag&os.O_CREATE != 0 {
		fs.log("create", name)
	}
	return &recordFile{File: f, fs: fs, path: name}, nil
}

func (fs *recordFS) SyncDir(dir string) error {
	fs.log("syncdir", dir)
	return fs.OS.SyncDir(dir)
}

func (fs *recordFS) Rename(from, to string) error {
	rel, _ := filepath.Rel(fs.dir, to)
	fs.log("rename", from+" -> "+rel)
	return fs.OS.Rename(from, to)
}

type recordFile struct {
	vfs.File
	fs   *recordFS
	path string
}

func (f *recordFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.log("write", f.path)
	return f.File.WriteAt(b, off)
}

func (f *recordFile) Sync() error {
	f.fs.log("sync", f.path)
	return f.File.Sync()
}

// TestWritesThroughFS: the checkpoint and the snapshot are written through
// the given file system, in the order that makes them durable: a new
// checkpoint file's directory is synced before Open returns, every copy is
// synced, and a snapshot is synced, renamed into place and its directory
// synced.
func TestWritesThroughFS(t *testing.T) {
	dir := t.TempDir()
	fs := &recordFS{dir: dir}
	f, err := Open(fs, filepath.Join(dir, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := []string{"create checkpoint", "syncdir ."}
	if got := fs.take(); !slices.Equal(got, want) {
		t.Fatalf("new checkpoint: %q, want %q", got, want)
	}
	if err := f.Write(sampleCheckpoint()); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(sampleCheckpoint()); err != nil {
		t.Fatal(err)
	}
	want = []string{"write checkpoint", "sync checkpoint", "write checkpoint", "sync checkpoint"}
	if got := fs.take(); !slices.Equal(got, want) {
		t.Fatalf("checkpoint writes: %q, want %q", got, want)
	}
	_ = f.Close()
	f, err = Open(fs, filepath.Join(dir, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := f.Latest(); !ok || c.Counter != 2 {
		t.Fatalf("reopened checkpoint: %+v, %v", c, ok)
	}
	if got := fs.take(); len(got) != 1 || got[0] != "create checkpoint" { // O_CREATE, no directory sync
		t.Fatalf("reopen: %q", got)
	}

	snap := filepath.Join(dir, "wheel.snap")
	for _, sync := range []bool{true, false} {
		if err := WriteSnapshot(fs, snap, EncodeSnapshot(sampleSnapshot()), sync); err != nil {
			t.Fatal(err)
		}
		want := []string{"create wheel.snap.tmp", "write wheel.snap.tmp", "sync wheel.snap.tmp",
			"rename wheel.snap.tmp -> wheel.snap", "syncdir ."}
		if !sync {
			want = []string{"create wheel.snap.tmp", "write wheel.snap.tmp", "rename wheel.snap.tmp -> wheel.snap"}
		}
		got := fs.take()
		for i := range got {
			got[i] = strings.Replace(got[i], dir+"/", "", 1)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("snapshot (sync %v): %q, want %q", sync, got, want)
		}
		if s, err := ReadSnapshot(fs, snap); err != nil || !reflect.DeepEqual(s, sampleSnapshot()) {
			t.Fatalf("read back: %+v, %v", s, err)
		}
	}
}
