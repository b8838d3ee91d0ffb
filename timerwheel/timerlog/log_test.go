package timerlog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

const testSegSize = 4096 // 47 entries per segment

func openTest(t *testing.T, dir string, minKeep uint64) (*Log, Repair) {
	t.Helper()
	l, rep, err := Open(Options{Dir: dir, SegmentSize: testSegSize, MinKeep: minKeep})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, rep
}

// appendN appends n records in groups of group; every group ends with a
// commit record. Returns the first new seq.
func appendN(t *testing.T, l *Log, n, group int) uint64 {
	t.Helper()
	first := l.Last() + 1
	for done := 0; done < n; {
		k := min(group, n-done)
		recs := make([]Record, k)
		for i := range recs {
			seq := first + uint64(done+i)
			recs[i] = Record{Seq: seq, Kind: KindNormal, DeliverMs: int64(seq) * 10, EffMs: int64(seq) * 10,
				Slot: int64(seq), CLOffset: int64(seq) * 100, CQOffset: int64(seq), Size: 100}
		}
		recs[k-1].Flags |= FlagCommit
		if err := l.Append(recs); err != nil {
			t.Fatal(err)
		}
		done += k
	}
	return first
}

func checkMirror(t *testing.T, l *Log) {
	t.Helper()
	segs, err := listSegments(l.fs, l.opts.Dir)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(segs) != len(l.mirror.segs) {
		t.Fatalf("directory has %d segments, mirror %d", len(segs), len(l.mirror.segs))
	}
	for i := range segs {
		if segs[i].first != l.mirror.segs[i].first {
			t.Fatalf("segment %d: directory first %d, mirror %d", i, segs[i].first, l.mirror.segs[i].first)
		}
	}
}

func TestAppendReadScanAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	l, _ := openTest(t, dir, 0)
	// Batch sizes that end before, at, and across segment boundaries.
	for _, g := range []int{1, 46, 47, 48, 200, 3} {
		appendN(t, l, g*3, g)
		checkMirror(t, l)
	}
	last := l.Last()
	for seq := uint64(1); seq <= last; seq++ {
		r, err := l.Read(seq)
		if err != nil {
			t.Fatalf("read %d: %v", seq, err)
		}
		if r.Seq != seq || r.CLOffset != int64(seq)*100 {
			t.Fatalf("read %d got %+v", seq, r)
		}
	}
	if _, err := l.Read(last + 1); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read past end: %v", err)
	}
	var n uint64
	if err := l.Scan(1, func(seq uint64, r Record, err error) error {
		n++
		if err != nil || r.Seq != seq || seq != n {
			t.Fatalf("scan %d: %+v %v", seq, r, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != last {
		t.Fatalf("scanned %d of %d", n, last)
	}
	if err := l.SyncTo(last); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, rep := openTest(t, dir, last)
	if rep.Changed() || rep.Corrupt != 0 || rep.Missing {
		t.Fatalf("clean reopen repaired: %+v", rep)
	}
	if l2.Last() != last {
		t.Fatalf("reopen last %d, want %d", l2.Last(), last)
	}
	appendN(t, l2, 100, 7)
	checkMirror(t, l2)
}

func TestTruncateFront(t *testing.T) {
	dir := t.TempDir()
	l, _ := openTest(t, dir, 0)
	appendN(t, l, 500, 10)
	seg := l.SegmentFirst(300)
	if seg == 0 || seg > 300 {
		t.Fatalf("segment of 300 starts at %d", seg)
	}
	first, err := l.TruncateFront(300)
	if err != nil {
		t.Fatal(err)
	}
	if first != seg || l.First() != seg {
		t.Fatalf("first after truncate = %d/%d, want %d", first, l.First(), seg)
	}
	checkMirror(t, l)
	if _, err := l.Read(seg - 1); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read truncated: %v", err)
	}
	for seq := seg; seq <= 500; seq++ {
		if _, err := l.Read(seq); err != nil {
			t.Fatalf("read %d: %v", seq, err)
		}
	}
	appendN(t, l, 60, 60)
	_ = l.Close()
	l2, _ := openTest(t, dir, 0)
	if l2.First() != seg || l2.Last() != 560 {
		t.Fatalf("reopen range %d..%d", l2.First(), l2.Last())
	}
}

// tailPath returns the path of the newest segment file.
func tailPath(t *testing.T, dir string) string {
	segs, err := listSegments(vfs.OS{}, dir)
	if err != nil || len(segs) == 0 {
		t.Fatal(err)
	}
	return segs[len(segs)-1].path
}

func TestTornTailRepair(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, l *Log) // after 100 committed single records
		damage  func(t *testing.T, dir string)
		minKeep uint64
		last    uint64 // expected last seq after repair
		corrupt uint64
		uncomm  uint64
		healed  bool // the corrupt entry is readable after repair
	}{
		{name: "clean", last: 100},
		{name: "partial entry", last: 99, damage: func(t *testing.T, dir string) {
			p := tailPath(t, dir)
			fi, _ := os.Stat(p)
			must(t, os.Truncate(p, fi.Size()-30))
		}},
		{name: "garbage appended", last: 100, damage: func(t *testing.T, dir string) {
			appendBytes(t, tailPath(t, dir), []byte("not a record at all, definitely torn"))
		}},
		{name: "zero filled tail", last: 100, damage: func(t *testing.T, dir string) {
			appendBytes(t, tailPath(t, dir), make([]byte, 3*EntrySize+5))
		}},
		{name: "flip in last entry", last: 99, damage: func(t *testing.T, dir string) {
			flipAt(t, tailPath(t, dir), -20)
		}},
		{name: "unsynced hole cuts the rest", last: 97, damage: func(t *testing.T, dir string) {
			flipAt(t, tailPath(t, dir), -3*EntrySize+40)
		}},
		{name: "synced flip kept as corrupt", minKeep: 100, last: 100, corrupt: 1, damage: func(t *testing.T, dir string) {
			flipAt(t, tailPath(t, dir), -3*EntrySize+40)
		}},
		{name: "synced length byte flipped", minKeep: 100, last: 100, corrupt: 1, healed: true, damage: func(t *testing.T, dir string) {
			writeAt(t, tailPath(t, dir), -2*EntrySize, []byte{0x7f})
		}},
		{name: "uncommitted group", last: 100, uncomm: 5, setup: func(t *testing.T, l *Log) {
			appendUncommitted(t, l, 5)
		}},
		{name: "uncommitted group across segments", last: 100, uncomm: 120, setup: func(t *testing.T, l *Log) {
			appendUncommitted(t, l, 120)
		}},
		{name: "minKeep protects synced records", minKeep: 100, last: 100, corrupt: 1, damage: func(t *testing.T, dir string) {
			flipAt(t, tailPath(t, dir), -20)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openTest(t, dir, 0)
			appendN(t, l, 100, 1)
			if tc.setup != nil {
				tc.setup(t, l)
			}
			must(t, l.SyncTo(l.Last()))
			must(t, l.Close())
			if tc.damage != nil {
				tc.damage(t, dir)
			}
			l2, rep := openTest(t, dir, tc.minKeep)
			if l2.Last() != tc.last {
				t.Fatalf("last = %d, want %d (repair %+v)", l2.Last(), tc.last, rep)
			}
			if rep.Corrupt != tc.corrupt || rep.Uncommitted != tc.uncomm {
				t.Fatalf("repair %+v, want corrupt %d uncommitted %d", rep, tc.corrupt, tc.uncomm)
			}
			checkMirror(t, l2)
			bad := 0
			for seq := l2.First(); seq <= l2.Last(); seq++ {
				if _, err := l2.Read(seq); err != nil {
					if !errors.Is(err, ErrCorrupt) {
						t.Fatalf("read %d: %v", seq, err)
					}
					bad++
				}
			}
			if want := tc.corrupt; uint64(bad) != want && !(tc.healed && bad == 0) {
				t.Fatalf("%d corrupt reads, want %d", bad, want)
			}
			// The repaired log takes new records at the right place.
			next := appendN(t, l2, 10, 10)
			if next != tc.last+1 {
				t.Fatalf("next seq %d, want %d", next, tc.last+1)
			}
			if r, err := l2.Read(tc.last + 10); err != nil || r.Seq != tc.last+10 {
				t.Fatalf("read after append: %+v %v", r, err)
			}
		})
	}
}

func TestRepairNeverGoesBelowMinKeepMissing(t *testing.T) {
	dir := t.TempDir()
	l, _ := openTest(t, dir, 0)
	appendN(t, l, 20, 1)
	must(t, l.Close())
	_, rep := openTest(t, dir, 25) // checkpoint claims more than the log holds
	if !rep.Missing {
		t.Fatalf("repair %+v: want Missing", rep)
	}
}

func appendUncommitted(t *testing.T, l *Log, n int) {
	t.Helper()
	first := l.Last() + 1
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{Seq: first + uint64(i), Kind: KindNormal, Slot: 1}
	}
	must(t, l.Append(recs))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func appendBytes(t *testing.T, path string, b []byte) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.Write(b)
	must(t, err)
	must(t, f.Close())
}

// writeAt writes b at off; a negative off counts from the end of the file.
func writeAt(t *testing.T, path string, off int64, b []byte) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	if off < 0 {
		fi, err := f.Stat()
		must(t, err)
		off += fi.Size()
	}
	_, err = f.WriteAt(b, off)
	must(t, err)
}

func flipAt(t *testing.T, path string, off int64) {
	data, err := os.ReadFile(path)
	must(t, err)
	if off < 0 {
		off += int64(len(data))
	}
	writeAt(t, path, off, []byte{data[off] ^ 0x04})
}

func TestSegmentNames(t *testing.T) {
	if got := filepath.Base(segmentName(42)); got != "00000000000000000042" {
		t.Fatal(got)
	}
}

// TestTruncateMany: after many front truncations appends, reads and a
// reopen still line up, and only the kept segments are on disk.
func TestTruncateMany(t *testing.T) {
	dir := t.TempDir()
	l, _ := openTest(t, dir, 0)
	for round := 0; round < 6; round++ {
		appendN(t, l, 150, 10)
		if _, err := l.TruncateFront(l.Last() - 20); err != nil {
			t.Fatal(err)
		}
		checkMirror(t, l)
	}
	for seq := l.First(); seq <= l.Last(); seq++ {
		if _, err := l.Read(seq); err != nil {
			t.Fatalf("read %d: %v", seq, err)
		}
	}
	first, last := l.First(), l.Last()
	must(t, l.Close())
	l2, _ := openTest(t, dir, 0)
	if l2.First() != first || l2.Last() != last {
		t.Fatalf("reopen %d..%d, want %d..%d", l2.First(), l2.Last(), first, last)
	}
}
