package index

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// small are options that roll files quickly.
var small = Options{Slots: 4, MaxEntries: 8}

func mustOpen(t *testing.T, dir string, o Options) *Index {
	t.Helper()
	ix, err := Open(dir, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	return ix
}

// rec is one record to index: its offset, store time and keys.
type rec struct {
	topic string
	off   int64
	ts    int64
	keys  []string
}

// addAll adds and flushes records; position is the end of the last one.
func addAll(t *testing.T, ix *Index, recs []rec) {
	t.Helper()
	for _, r := range recs {
		for _, k := range r.keys {
			if err := ix.Add(r.topic, k, r.off, r.ts); err != nil {
				t.Fatalf("Add: %v", err)
			}
		}
	}
	if err := ix.Flush(recs[len(recs)-1].off + 100); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// series returns n records of topic T, 100 bytes apart, stored 1 s apart,
// record i with keys "k<i>", "all" and (for even i) "even".
func series(from, n int) []rec {
	var out []rec
	for i := from; i < from+n; i++ {
		keys := []string{fmt.Sprintf("k%d", i), "all"}
		if i%2 == 0 {
			keys = append(keys, "even")
		}
		out = append(out, rec{topic: "T", off: int64(i) * 100, ts: 1_000_000 + int64(i)*1000, keys: keys})
	}
	return out
}

func lookup(t *testing.T, ix *Index, topic, key string, begin, end int64, max int) []int64 {
	t.Helper()
	hits, err := ix.Lookup(topic, key, begin, end, max)
	if err != nil {
		t.Fatalf("Lookup(%s, %s): %v", topic, key, err)
	}
	var offs []int64
	for _, h := range hits {
		offs = append(offs, h.Offset)
	}
	return offs
}

// offsets returns the offsets of records i in [from, to) of series.
func offsets(idx ...int) []int64 {
	var out []int64
	for _, i := range idx {
		out = append(out, int64(i)*100)
	}
	return out
}

func rangeIdx(from, to, step int) []int {
	var out []int
	for i := from; i < to; i += step {
		out = append(out, i)
	}
	return out
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	slices.Sort(out)
	return out
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func lastFile(t *testing.T, dir string) string {
	t.Helper()
	fs := files(t, dir)
	return filepath.Join(dir, fs[len(fs)-1])
}

func equal(a, b []int64) bool { return slices.Equal(a, b) || (len(a) == 0 && len(b) == 0) }
