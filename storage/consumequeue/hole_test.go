package consumequeue

import (
	"errors"
	"testing"
)

// TestHolesAndTruncateAt appends hole units, reopens, and rebuilds a queue
// tail with TruncateAt, as the dispatcher does with a damaged queue.
func TestHolesAndTruncateAt(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{UnitsPerFile: 4})
	q := mustQueue(t, s, "T", 0)
	us := unitsFrom(0, 3)
	mustAppend(t, q, us...)
	mustAppend(t, q, Hole(250), Hole(251))
	if err := q.Append(Hole(251)); !errors.Is(err, ErrInvalidUnit) {
		t.Fatalf("hole not above the previous unit: %v", err)
	}
	if err := q.Append(Unit{Offset: 900, Size: -2}); !errors.Is(err, ErrInvalidUnit) {
		t.Fatalf("size -2 accepted: %v", err)
	}
	mustAppend(t, q, Unit{Offset: 500, Size: 92})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, Options{UnitsPerFile: 4})
	q = s.Lookup("T", 0)
	got := readAll(t, q)
	if len(got) != 6 || !got[3].IsHole() || !got[4].IsHole() || got[5].Offset != 500 || got[2].IsHole() {
		t.Fatalf("units after reopen: %+v", got)
	}
	if q.CutAtOpen() != 0 {
		t.Fatalf("clean reopen cut %d bytes", q.CutAtOpen())
	}
	// Rebuild from unit 2: cut, then append again.
	if err := q.TruncateAt(7); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("TruncateAt past the end: %v", err)
	}
	if err := q.TruncateAt(2); err != nil {
		t.Fatal(err)
	}
	if q.MaxOffset() != 2 {
		t.Fatalf("MaxOffset %d after TruncateAt(2)", q.MaxOffset())
	}
	if err := q.Append(Unit{Offset: us[1].Offset, Size: 92}); !errors.Is(err, ErrInvalidUnit) {
		t.Fatalf("append below the kept tail: %v", err)
	}
	mustAppend(t, q, us[2], Unit{Offset: 500, Size: 92})
	got = readAll(t, q)
	if len(got) != 4 || got[2] != us[2] || got[3].Offset != 500 {
		t.Fatalf("rebuilt units %+v", got)
	}
}

// TestCutAtOpen reports a tail cut by recovery.
func TestCutAtOpen(t *testing.T) {
	dir := t.TempDir()
	buildQueue(t, dir)
	appendTo(t, unitPath(dir, "T", 8), appendUnit(nil, Unit{Offset: 5, Size: 10}))
	s := mustOpen(t, dir, Options{UnitsPerFile: 4})
	if got := s.Lookup("T", 0).CutAtOpen(); got != UnitSize {
		t.Fatalf("CutAtOpen %d, want %d", got, UnitSize)
	}
}
