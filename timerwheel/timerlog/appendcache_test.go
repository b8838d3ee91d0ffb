package timerlog

import (
	"errors"
	"os"
	"testing"
)

// zeroSegments overwrites every segment file of l with zeros, so that an
// entry read from a file fails validation and only cached blocks answer.
func zeroSegments(t *testing.T, l *Log) {
	t.Helper()
	for _, s := range l.mirror.segs {
		fi, err := os.Stat(s.path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(s.path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(make([]byte, fi.Size()), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// addedMs is when the test records were added.
const addedMs = 1_796_000_000_000

// appendDue appends n records in batches of group, each batch due at
// dueMs(batch number) and added at addedMs; it records them in into by
// sequence.
func appendDue(t *testing.T, l *Log, n, group int, dueMs func(batch int) int64, into map[uint64]Record) {
	t.Helper()
	for done, b := 0, 0; done < n; b++ {
		k := min(group, n-done)
		recs := make([]Record, k)
		for i := range recs {
			seq := l.Last() + 1 + uint64(i)
			due := dueMs(b)
			recs[i] = Record{Seq: seq, Kind: KindNormal, DeliverMs: due, EffMs: due, AddedMs: addedMs, Slot: int64(seq),
				CLOffset: int64(seq) * 100, CQOffset: int64(seq), Size: 100}
		}
		recs[k-1].Flags |= FlagCommit
		if err := l.Append(recs); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			into[r.Seq] = r
		}
		done += k
	}
}

// TestAppendCacheKeepsSoonBlocks appends whole blocks due soon and due in
// a year in turn, zeroes the files, and reads everything back: the blocks
// due soon come from the cache, intact; the others go to the file and
// fail validation (so nothing else was cached).
func TestAppendCacheKeepsSoonBlocks(t *testing.T) {
	l, _, err := Open(Options{Dir: t.TempDir(), SegmentSize: 1 << 20, CacheDueWithinMs: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	now := int64(addedMs)
	want := map[uint64]Record{}
	appendDue(t, l, 20*entriesPerBlock, entriesPerBlock, func(b int) int64 {
		if b%2 == 0 {
			return now + 1000
		}
		return now + 365*24*3600*1000
	}, want)
	zeroSegments(t, l)
	for seq := l.First(); seq <= l.Last(); seq++ {
		got, err := l.Read(seq)
		soon := (seq-l.First())/entriesPerBlock%2 == 0
		switch {
		case soon && err != nil:
			t.Fatalf("seq %d (due soon): %v, want it from the cache", seq, err)
		case soon && got != want[seq]:
			t.Fatalf("seq %d (due soon): cached %+v, want %+v", seq, got, want[seq])
		case !soon && !errors.Is(err, ErrCorrupt):
			t.Fatalf("seq %d (due in a year): err %v, want it read from the zeroed file (ErrCorrupt)", seq, err)
		}
	}
}

// TestAppendCacheAcrossSegments appends small batches that straddle block
// and segment boundaries (47-entry segments, 46-entry blocks), all due
// soon, zeroes the files, and reads every record back intact from the
// cache (an entry cached at the wrong place would fail its sequence check).
func TestAppendCacheAcrossSegments(t *testing.T) {
	l, _, err := Open(Options{Dir: t.TempDir(), SegmentSize: testSegSize, CacheDueWithinMs: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	now := int64(addedMs)
	want := map[uint64]Record{}
	appendDue(t, l, 400, 7, func(int) int64 { return now }, want)
	zeroSegments(t, l)
	for seq := l.First(); seq <= l.Last(); seq++ {
		got, err := l.Read(seq)
		if err != nil || got != want[seq] {
			t.Fatalf("seq %d: %+v, %v; want %+v from the cache", seq, got, err, want[seq])
		}
	}
}
