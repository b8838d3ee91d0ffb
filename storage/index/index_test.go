package index

import (
	"errors"
	"testing"
)

func TestLookup(t *testing.T) {
	ix := mustOpen(t, t.TempDir(), small)
	addAll(t, ix, series(0, 40))
	addAll(t, ix, []rec{
		{topic: "U", off: 5000, ts: 1_100_000, keys: []string{"all", "k3"}},
		{topic: "T", off: 5100, ts: 1_100_000, keys: []string{"dup", "dup", "x"}},
	})
	tests := []struct {
		name       string
		topic, key string
		begin, end int64
		max        int
		want       []int64
	}{
		{"unique key", "T", "k7", 0, 1 << 62, 64, offsets(7)},
		{"in an old file", "T", "k0", 0, 1 << 62, 64, offsets(0)},
		{"topic matters", "U", "k3", 0, 1 << 62, 64, []int64{5000}},
		{"other topic's key", "U", "k7", 0, 1 << 62, 64, nil},
		{"unknown key", "T", "nope", 0, 1 << 62, 64, nil},
		{"many, ascending", "T", "all", 0, 1 << 62, 64, offsets(rangeIdx(0, 40, 1)...)},
		{"cap keeps the newest", "T", "all", 0, 1 << 62, 5, offsets(35, 36, 37, 38, 39)},
		{"time range", "T", "all", 1_010_000, 1_014_000, 64, offsets(10, 11, 12, 13, 14)},
		{"time range inclusive, cap", "T", "even", 1_010_000, 1_020_000, 3, offsets(16, 18, 20)},
		{"range before everything", "T", "all", 0, 999_999, 64, nil},
		{"range after everything", "T", "k1", 1_200_000, 1_300_000, 64, nil},
		{"same key twice in a record", "T", "dup", 0, 1 << 62, 64, []int64{5100}},
	}
	for _, tt := range tests {
		if got := lookup(t, ix, tt.topic, tt.key, tt.begin, tt.end, tt.max); !equal(got, tt.want) {
			t.Errorf("%s: Lookup(%s, %s) = %v, want %v", tt.name, tt.topic, tt.key, got, tt.want)
		}
	}
	if off, ts := ix.Last(); off != 5100 || ts != 1_100_000 {
		t.Errorf("Last() = %d, %d; want 5100, 1100000", off, ts)
	}
	// 40 records with 2-3 keys each (100 entries) + 5 = 105 entries, 8 per file.
	if s := ix.Stats(); s.Entries != 105 || s.Files != 14 {
		t.Errorf("Stats = %+v, want 105 entries in 14 files", s)
	}
}

func TestAddOrderAndEmptyKeys(t *testing.T) {
	ix := mustOpen(t, t.TempDir(), small)
	if err := ix.Add("T", "a", 100, 1); err != nil {
		t.Fatal(err)
	}
	if err := ix.Add("T", "b", 100, 1); err != nil {
		t.Fatalf("second key of the same record: %v", err)
	}
	if err := ix.Add("T", "c", 50, 1); !errors.Is(err, ErrOutOfOrder) {
		t.Errorf("Add below the previous offset = %v, want ErrOutOfOrder", err)
	}
	if err := ix.Add("T", "", 200, 1); err != nil {
		t.Errorf("empty key: %v", err)
	}
	if err := ix.Flush(300); err != nil {
		t.Fatal(err)
	}
	if s := ix.Stats(); s.Entries != 2 {
		t.Errorf("%d entries, want 2 (empty key skipped)", s.Entries)
	}
}

func TestRestartKeepsSyncedEntries(t *testing.T) {
	dir := t.TempDir()
	ix := mustOpen(t, dir, small)
	addAll(t, ix, series(0, 30))
	if err := ix.Sync(); err != nil {
		t.Fatal(err)
	}
	pos := ix.Position()
	if pos != 29*100+100 {
		t.Fatalf("Position = %d, want %d", pos, 3000)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = mustOpen(t, dir, small)
	if ix.Position() != pos {
		t.Errorf("Position after reopen = %d, want %d", ix.Position(), pos)
	}
	if got := lookup(t, ix, "T", "all", 0, 1<<62, 64); !equal(got, offsets(rangeIdx(0, 30, 1)...)) {
		t.Errorf("after reopen: all = %v", got)
	}
	// Indexing resumes where it stopped, and new files continue the sequence.
	addAll(t, ix, series(30, 10))
	if got := lookup(t, ix, "T", "even", 0, 1<<62, 64); !equal(got, offsets(rangeIdx(0, 40, 2)...)) {
		t.Errorf("after resuming: even = %v", got)
	}
}

func TestUnsyncedEntriesAreDroppedOnReopen(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    Options
	}{
		{"in the active file", Options{Slots: 4, MaxEntries: 1000}},
		{"across rolled files", small},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ix := mustOpen(t, dir, tt.o)
			addAll(t, ix, series(0, 10))
			if err := ix.Sync(); err != nil {
				t.Fatal(err)
			}
			synced := ix.Position()
			// More entries, flushed but not synced; abandon the index without
			// Close (which would sync), as a crash would.
			addAll(t, ix, series(10, 20))
			ix.closed = true
			_ = ix.closeFiles()

			ix2 := mustOpen(t, dir, tt.o)
			pos := ix2.Position()
			if pos < synced || pos > 3000 {
				t.Fatalf("Position = %d, want between the synced %d and 3000", pos, synced)
			}
			if tt.o.MaxEntries == 1000 && pos != synced {
				t.Errorf("without a roll the position must be the synced one: %d, want %d", pos, synced)
			}
			want := rangeIdx(0, int(pos/100), 1)
			if got := lookup(t, ix2, "T", "all", 0, 1<<62, 64); !equal(got, offsets(want...)) {
				t.Errorf("after reopen at %d: %v", pos, got)
			}
			// Re-indexing from the position adds each record exactly once.
			addAll(t, ix2, series(int(pos/100), 30-int(pos/100)))
			if got := lookup(t, ix2, "T", "all", 0, 1<<62, 64); !equal(got, offsets(rangeIdx(0, 30, 1)...)) {
				t.Errorf("after re-indexing: %v", got)
			}
			if s := ix2.Stats(); s.Entries != 75 {
				t.Errorf("%d entries after re-indexing, want 75 (no duplicates)", s.Entries)
			}
		})
	}
}

func TestTruncateFrom(t *testing.T) {
	dir := t.TempDir()
	ix := mustOpen(t, dir, small)
	addAll(t, ix, series(0, 30)) // 75 entries: 10 files
	if err := ix.Sync(); err != nil {
		t.Fatal(err)
	}
	before := len(files(t, dir))
	// Cut inside a sealed file several files back.
	if err := ix.TruncateFrom(1200); err != nil {
		t.Fatal(err)
	}
	if ix.Position() != 1200 || ix.FlushedPosition() != 1200 {
		t.Errorf("Position %d Flushed %d after TruncateFrom(1200)", ix.Position(), ix.FlushedPosition())
	}
	if got := lookup(t, ix, "T", "all", 0, 1<<62, 64); !equal(got, offsets(rangeIdx(0, 12, 1)...)) {
		t.Errorf("after TruncateFrom: %v", got)
	}
	if after := len(files(t, dir)); after >= before {
		t.Errorf("%d files after the cut, %d before: later files must go", after, before)
	}
	addAll(t, ix, series(12, 18))
	if got := lookup(t, ix, "T", "even", 0, 1<<62, 64); !equal(got, offsets(rangeIdx(0, 30, 2)...)) {
		t.Errorf("after re-indexing: %v", got)
	}
	// A cut above everything only lowers nothing; a cut below everything empties.
	if err := ix.TruncateFrom(1 << 40); err != nil {
		t.Fatal(err)
	}
	if err := ix.TruncateFrom(0); err != nil {
		t.Fatal(err)
	}
	if s := ix.Stats(); s.Entries != 0 || ix.Position() != 0 {
		t.Errorf("after TruncateFrom(0): %+v, position %d", s, ix.Position())
	}
	ix.Close()
	ix = mustOpen(t, dir, small)
	if s := ix.Stats(); s.Entries != 0 || ix.Position() != 0 {
		t.Errorf("reopened after TruncateFrom(0): %+v, position %d", s, ix.Position())
	}
}

func TestTruncateFromLowersPositionWithoutEntries(t *testing.T) {
	ix := mustOpen(t, t.TempDir(), small)
	addAll(t, ix, []rec{{topic: "T", off: 0, ts: 1, keys: []string{"a"}}})
	if err := ix.Flush(10_000); err != nil { // records without keys up to 10000
		t.Fatal(err)
	}
	if err := ix.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := ix.TruncateFrom(5000); err != nil {
		t.Fatal(err)
	}
	if ix.Position() != 5000 {
		t.Errorf("Position = %d, want 5000", ix.Position())
	}
	if got := lookup(t, ix, "T", "a", 0, 10, 8); !equal(got, []int64{0}) {
		t.Errorf("entry below the cut lost: %v", got)
	}
}

func TestRemoveBefore(t *testing.T) {
	dir := t.TempDir()
	ix := mustOpen(t, dir, small)
	addAll(t, ix, series(0, 30))
	n, err := ix.RemoveBefore(1000)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no file removed")
	}
	got := lookup(t, ix, "T", "all", 0, 1<<62, 64)
	if len(got) == 0 || got[0] < 600 || got[len(got)-1] != 2900 {
		t.Errorf("after RemoveBefore(1000): %v", got)
	}
	// Everything before the active file, never the active file.
	if _, err := ix.RemoveBefore(1 << 40); err != nil {
		t.Fatal(err)
	}
	if s := ix.Stats(); s.Files != 1 {
		t.Errorf("%d files left, want the active one", s.Files)
	}
}

func TestLookupScanBudget(t *testing.T) {
	o := small
	o.MaxScan = 10
	ix := mustOpen(t, t.TempDir(), o)
	addAll(t, ix, series(0, 40))
	// One chain per file with 4 slots: at most 10 entries examined in total.
	if got := lookup(t, ix, "T", "all", 0, 1<<62, 64); len(got) == 0 || len(got) > 10 {
		t.Errorf("Lookup with a budget of 10 returned %d hits", len(got))
	}
}

func TestOptionsValidated(t *testing.T) {
	for _, o := range []Options{{Slots: -1}, {MaxEntries: -5}, {MaxScan: -1}} {
		if _, err := Open(t.TempDir(), o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Open(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestKeyHash(t *testing.T) {
	// FNV-1a 64 of "T#k" computed by hand from the spec constants.
	h := uint64(14695981039346656037)
	for _, c := range []byte("T#k") {
		h = (h ^ uint64(c)) * 1099511628211
	}
	if KeyHash("T", "k") != h {
		t.Errorf("KeyHash = %x, want %x", KeyHash("T", "k"), h)
	}
	if KeyHash("T#", "k") != KeyHash("T", "#k") {
		t.Error("the hash must be that of the joined key <topic>#<key>")
	}
}

func TestKeyHashBytesEqualsString(t *testing.T) {
	if KeyHash([]byte("orders"), []byte("k-1")) != KeyHash("orders", "k-1") {
		t.Error("KeyHash differs between []byte and string")
	}
}
