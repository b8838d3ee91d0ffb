package timerlog

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tidwall/wal"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// The on-disk format is tidwall/wal's binary segment format. The log writes
// it itself (wal cannot write through vfs), and these tests keep it wal's:
// the same batches written by wal and by the log give the same files byte
// for byte, wal reads every entry the log wrote, and the log opens what wal
// wrote, including what a crash in wal.TruncateFront or TruncateBack left.

// testRecord is the record of sequence seq that the tests here write.
func testRecord(seq uint64, commit bool) Record {
	r := Record{Seq: seq, Kind: KindNormal, DeliverMs: 1_700_000_000_000 + int64(seq), EffMs: 1_700_000_000_000 + int64(seq),
		AddedMs: 1_699_999_000_000, Slot: int64(seq) / 3, CLOffset: int64(seq) * 311, CQOffset: int64(seq), KeyHash: seq * 0x9e3779b97f4a7c15, Size: 200}
	if seq > 5 {
		r.Prev = seq - 5
	}
	if commit {
		r.Flags |= FlagCommit
	}
	return r
}

func encodedRecord(r Record) []byte {
	b := make([]byte, RecordSize)
	r.Encode(b)
	return b
}

func walOpts(segSize int) *wal.Options {
	return &wal.Options{NoSync: true, SegmentSize: segSize, LogFormat: wal.Binary, DirPerms: 0o750, FilePerms: 0o640}
}

// phase is a run of batches written with one segment size, between a close
// and a reopen.
type phase struct {
	segSize int
	batches []int
}

// writeBoth writes the phases with wal into walDir and with Log into
// logDir, closing and reopening both between phases. Open's tail repair
// removes an empty tail segment (one that holds no committed record), so
// before reopening wal the same is done to walDir: what a segment that
// ends exactly at SegmentSize then gets is wal's rule too.
func writeBoth(t *testing.T, walDir, logDir string, phases []phase) (last uint64) {
	t.Helper()
	for _, ph := range phases {
		if segs, err := listSegments(vfs.OS{}, walDir); err == nil && len(segs) > 1 {
			if fi, err := os.Stat(segs[len(segs)-1].path); err == nil && fi.Size() == 0 {
				must(t, os.Remove(segs[len(segs)-1].path))
			}
		}
		w, err := wal.Open(walDir, walOpts(ph.segSize))
		must(t, err)
		l, _, err := Open(Options{Dir: logDir, SegmentSize: ph.segSize, NoSync: true})
		must(t, err)
		var b wal.Batch
		for _, n := range ph.batches {
			recs := make([]Record, n)
			b.Clear()
			for i := range recs {
				recs[i] = testRecord(last+1+uint64(i), i == n-1)
				b.Write(recs[i].Seq, encodedRecord(recs[i]))
			}
			must(t, w.WriteBatch(&b))
			must(t, l.Append(recs))
			last += uint64(n)
		}
		must(t, w.Close())
		must(t, l.Close())
	}
	return last
}

// dirFiles returns the names and contents of the files in dir.
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	files := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		must(t, err)
		files[e.Name()] = b
	}
	return files
}

func sameFiles(t *testing.T, what string, got, want map[string][]byte) {
	t.Helper()
	names := func(m map[string][]byte) []string {
		var s []string
		for k := range m {
			s = append(s, k)
		}
		slices.Sort(s)
		return s
	}
	if !slices.Equal(names(got), names(want)) {
		t.Fatalf("%s: files %v, want %v", what, names(got), names(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Fatalf("%s: %s differs (%d bytes, want %d)", what, name, len(got[name]), len(b))
		}
	}
}

// readAllWAL opens dir with wal and checks that it holds exactly the test
// records first..last.
func readAllWAL(t *testing.T, dir string, segSize int, first, last uint64) {
	t.Helper()
	w, err := wal.Open(dir, walOpts(segSize))
	must(t, err)
	defer w.Close()
	fi, err := w.FirstIndex()
	must(t, err)
	li, err := w.LastIndex()
	must(t, err)
	if fi != first || li != last {
		t.Fatalf("wal sees %d..%d, want %d..%d", fi, li, first, last)
	}
	for seq := first; seq <= last; seq++ {
		data, err := w.Read(seq)
		if err != nil {
			t.Fatalf("wal read %d: %v", seq, err)
		}
		r, err := Decode(data)
		if err != nil || r.Seq != seq || r.CLOffset != int64(seq)*311 {
			t.Fatalf("wal read %d: %+v, %v", seq, r, err)
		}
	}
}

// formatPhases are batch runs that end before, at and across segment
// boundaries, batches larger than a segment, a reopen right after a
// segment was filled, and a reopen with a smaller segment size (a tail
// already over it: wal starts a new segment first).
func formatPhases(segSize int) []phase {
	rng := rand.New(rand.NewPCG(7, uint64(segSize)))
	random := func(n, max int) []int {
		b := make([]int, n)
		for i := range b {
			b[i] = 1 + rng.IntN(max)
		}
		return b
	}
	per := (segSize + EntrySize - 1) / EntrySize
	return []phase{
		{segSize, []int{1, per - 2, 1}}, // exactly one segment
		{segSize, []int{1, per, per + 1, 3 * per, 2}},
		{segSize, random(40, 2*per)},
		{segSize * 3, random(10, per)},
		{segSize, random(20, per)},
	}
}

func TestWritesWALFormat(t *testing.T) {
	for _, segSize := range []int{testSegSize, 46 * EntrySize, 3*EntrySize + 1, 1 << 16} {
		t.Run(filepath.Base(segmentName(uint64(segSize))), func(t *testing.T) {
			walDir, logDir := t.TempDir(), t.TempDir()
			last := writeBoth(t, walDir, logDir, formatPhases(segSize))
			want := dirFiles(t, walDir)
			if len(want) < 3 {
				t.Fatalf("only %d segments: the test does not cross segments", len(want))
			}
			sameFiles(t, "log against wal", dirFiles(t, logDir), want)
			readAllWAL(t, logDir, segSize, 1, last)
		})
	}
}

// TestOpensWALLog opens a log that wal wrote, reads it, appends to it, and
// hands it back to wal.
func TestOpensWALLog(t *testing.T) {
	dir := t.TempDir()
	w, err := wal.Open(dir, walOpts(testSegSize))
	must(t, err)
	var b wal.Batch
	var last uint64
	for _, n := range []int{1, 30, 47, 100, 5} {
		b.Clear()
		for i := 0; i < n; i++ {
			last++
			b.Write(last, encodedRecord(testRecord(last, i == n-1)))
		}
		must(t, w.WriteBatch(&b))
	}
	must(t, w.Close())

	l, rep := openTest(t, dir, last)
	if rep.Changed() || rep.Corrupt != 0 || rep.Missing {
		t.Fatalf("wal's log repaired: %+v", rep)
	}
	if l.First() != 1 || l.Last() != last {
		t.Fatalf("log %d..%d, want 1..%d", l.First(), l.Last(), last)
	}
	checkMirror(t, l)
	for seq := uint64(1); seq <= last; seq++ {
		if r, err := l.Read(seq); err != nil || r != testRecord(seq, r.Flags&FlagCommit != 0) {
			t.Fatalf("read %d: %+v, %v", seq, r, err)
		}
	}
	recs := make([]Record, 60)
	for i := range recs {
		recs[i] = testRecord(last+1+uint64(i), i == len(recs)-1)
	}
	must(t, l.Append(recs))
	last += uint64(len(recs))
	must(t, l.SyncTo(last))
	must(t, l.Close())
	readAllWAL(t, dir, testSegSize, 1, last)
}

// TestFinishesWALTruncation builds what a crash in the middle of wal's
// TruncateFront or TruncateBack leaves and opens it with the log and with
// wal: both end with the same files (apart from wal's .TEMP files, which the
// log removes) and the same range of entries.
func TestFinishesWALTruncation(t *testing.T) {
	base := t.TempDir()
	w, err := wal.Open(base, walOpts(testSegSize))
	must(t, err)
	const n = 300 // seven segments: 1, 48, 95, 142, 189, 236, 283
	for seq := uint64(1); seq <= n; seq++ {
		must(t, w.Write(seq, encodedRecord(testRecord(seq, true))))
	}
	must(t, w.Close())
	seg := func(first uint64) string { return segmentName(first) }
	content := func(first uint64, from, to uint64) []byte { // entries from..to of a segment
		b, err := os.ReadFile(filepath.Join(base, seg(first)))
		must(t, err)
		return b[(from-first)*EntrySize : (to-first+1)*EntrySize]
	}
	type file struct {
		name string
		data []byte // nil: remove
	}
	tests := []struct {
		name        string
		files       []file
		first, last uint64
	}{
		{"front: .START written", []file{{seg(142) + walStart, content(142, 142, 188)}}, 142, n},
		{"front: older segments partly removed", []file{{seg(142) + walStart, content(142, 142, 188)},
			{seg(1), nil}, {seg(48), nil}}, 142, n},
		{"front: all removed, not renamed", []file{{seg(142) + walStart, content(142, 142, 188)},
			{seg(1), nil}, {seg(48), nil}, {seg(95), nil}, {seg(142), nil}}, 142, n},
		{"front: .START of the tail", []file{{seg(283) + walStart, content(283, 283, n)}}, 283, n},
		{"front: crash in the temporary file", []file{{seg(142) + walStart + walTemp, content(142, 142, 150)}}, 1, n},
		{"back: .END written", []file{{seg(189) + walEnd, content(189, 189, 200)}}, 1, 200},
		{"back: later segments partly removed", []file{{seg(189) + walEnd, content(189, 189, 200)},
			{seg(283), nil}}, 1, 200},
		{"back: segment itself removed", []file{{seg(189) + walEnd, content(189, 189, 200)},
			{seg(283), nil}, {seg(236), nil}, {seg(189), nil}}, 1, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			walDir, logDir := t.TempDir(), t.TempDir()
			for _, dir := range []string{walDir, logDir} {
				for name, b := range dirFiles(t, base) {
					must(t, os.WriteFile(filepath.Join(dir, name), b, 0o640))
				}
				for _, f := range tc.files {
					if f.data == nil {
						must(t, os.Remove(filepath.Join(dir, f.name)))
					} else {
						must(t, os.WriteFile(filepath.Join(dir, f.name), f.data, 0o640))
					}
				}
			}
			w, err := wal.Open(walDir, walOpts(testSegSize))
			must(t, err)
			must(t, w.Close())
			l, _ := openTest(t, logDir, 0)
			if l.First() != tc.first || l.Last() != tc.last {
				t.Fatalf("log %d..%d, want %d..%d", l.First(), l.Last(), tc.first, tc.last)
			}
			for seq := l.First(); seq <= l.Last(); seq++ {
				if _, err := l.Read(seq); err != nil {
					t.Fatalf("read %d: %v", seq, err)
				}
			}
			must(t, l.Close())
			want := dirFiles(t, walDir)
			for name := range want {
				if isWALTemp(name) {
					delete(want, name)
				}
			}
			sameFiles(t, "log against wal", dirFiles(t, logDir), want)
			readAllWAL(t, logDir, testSegSize, tc.first, tc.last)
		})
	}
	t.Run("both .START and .END", func(t *testing.T) {
		dir := t.TempDir()
		for name, b := range dirFiles(t, base) {
			must(t, os.WriteFile(filepath.Join(dir, name), b, 0o640))
		}
		must(t, os.WriteFile(filepath.Join(dir, seg(95)+walStart), content(95, 95, 141), 0o640))
		must(t, os.WriteFile(filepath.Join(dir, seg(189)+walEnd), content(189, 189, 200), 0o640))
		if _, err := wal.Open(dir, walOpts(testSegSize)); !errors.Is(err, wal.ErrCorrupt) {
			t.Fatalf("wal open: %v, want its ErrCorrupt", err)
		}
		if _, _, err := Open(Options{Dir: dir, SegmentSize: testSegSize}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("open: %v, want ErrCorrupt", err)
		}
	})
}
