package timerlog

import (
	"errors"
	"testing"
)

// TestReadDense reads every record with ReadDense, in the orders a walk
// down the log and other callers use, across segments of different sizes,
// and checks each against Read; entries appended after a dense read of the
// tail and segments truncated away are not served from the run it holds.
func TestReadDense(t *testing.T) {
	for _, tc := range []struct {
		name    string
		segSize int
		n       int
		cached  bool // the log fits the share of the block cache runs may take
	}{
		{"small segments (47 entries, a run is cut by the segment)", testSegSize, 300, true},
		{"one segment, several runs", 1 << 20, 3000, true},
		{"runs not cached", 1 << 20, 3000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.cached {
				old := denseCacheBytes
				denseCacheBytes = EntrySize * 100
				t.Cleanup(func() { denseCacheBytes = old })
			}
			l, _, err := Open(Options{Dir: t.TempDir(), SegmentSize: tc.segSize})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			appendN(t, l, tc.n, 7)
			same := func(seq uint64) {
				t.Helper()
				want, err := l.Read(seq)
				if err != nil {
					t.Fatalf("Read %d: %v", seq, err)
				}
				got, err := l.ReadDense(seq)
				if err != nil {
					t.Fatalf("ReadDense %d: %v", seq, err)
				}
				if got != want {
					t.Fatalf("ReadDense %d = %+v, Read %+v", seq, got, want)
				}
			}
			for seq := l.Last(); seq >= l.First(); seq-- { // a walk down the log
				same(seq)
			}
			for seq := l.First(); seq <= l.Last(); seq += 5 { // upwards: every read may miss
				same(seq)
			}
			// The run now holds the tail: entries appended after it are read.
			same(l.Last())
			from := appendN(t, l, 50, 3)
			for seq := from; seq <= l.Last(); seq++ {
				same(seq)
			}
			// A truncated segment is out of range, not served from the run.
			same(l.First())
			gone := l.First()
			kept, err := l.TruncateFront(l.First() + uint64(tc.n/2))
			if err != nil {
				t.Fatal(err)
			}
			if kept > gone {
				if _, err := l.ReadDense(gone); !errors.Is(err, ErrOutOfRange) {
					t.Fatalf("ReadDense of truncated %d: %v, want ErrOutOfRange", gone, err)
				}
			}
			for seq := l.Last(); seq >= l.First(); seq-- {
				same(seq)
			}
		})
	}
}
