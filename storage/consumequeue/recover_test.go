package consumequeue

import (
	"os"
	"testing"
)

// buildQueue writes 10 standard units into queue T/0 with 4 units per file:
// files 0 (units 0-3), 4 (4-7), 8 (8-9).
func buildQueue(t *testing.T, dir string) {
	t.Helper()
	s, err := Open(dir, Options{UnitsPerFile: 4})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, mustQueue(t, s, "T", 0), unitsFrom(0, 10)...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func TestRecoverTornTail(t *testing.T) {
	tests := []struct {
		name      string
		damage    func(t *testing.T, dir string)
		wantUnits int
		wantFiles int
	}{
		{"clean", func(*testing.T, string) {}, 10, 3},
		{"partial unit", func(t *testing.T, dir string) {
			appendTo(t, unitPath(dir, "T", 8), appendUnit(nil, unitsFrom(10, 1)[0])[:7])
		}, 10, 3},
		{"zero-filled tail", func(t *testing.T, dir string) {
			appendTo(t, unitPath(dir, "T", 8), make([]byte, 40))
		}, 10, 3},
		{"unit going backwards", func(t *testing.T, dir string) {
			appendTo(t, unitPath(dir, "T", 8), appendUnit(nil, Unit{Offset: 5, Size: 10}))
		}, 10, 3},
		{"negative size", func(t *testing.T, dir string) {
			appendTo(t, unitPath(dir, "T", 8), appendUnit(nil, Unit{Offset: 5000, Size: -2}))
		}, 10, 3},
		{"units past the file end", func(t *testing.T, dir string) {
			var b []byte
			for _, u := range unitsFrom(10, 3) {
				b = appendUnit(b, u)
			}
			appendTo(t, unitPath(dir, "T", 8), b)
		}, 12, 3},
		{"middle of last file bad", func(t *testing.T, dir string) {
			if err := os.WriteFile(unitPath(dir, "T", 8), append(appendUnit(nil, unitsFrom(8, 1)[0]), make([]byte, 20)...), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 9, 3},
		{"short file before the last", func(t *testing.T, dir string) {
			if err := os.Truncate(unitPath(dir, "T", 4), 2*UnitSize+5); err != nil {
				t.Fatal(err)
			}
		}, 6, 2},
		{"empty last file", func(t *testing.T, dir string) {
			if err := os.Truncate(unitPath(dir, "T", 8), 0); err != nil {
				t.Fatal(err)
			}
		}, 8, 3},
		{"first unit of last file below previous file", func(t *testing.T, dir string) {
			if err := os.WriteFile(unitPath(dir, "T", 8), appendUnit(nil, Unit{Offset: 1, Size: 10}), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 8, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			buildQueue(t, dir)
			tt.damage(t, dir)
			s := mustOpen(t, dir, Options{UnitsPerFile: 4})
			q := s.Lookup("T", 0)
			if q == nil {
				t.Fatal("queue not loaded")
			}
			if q.MaxOffset() != int64(tt.wantUnits) {
				t.Fatalf("MaxOffset %d, want %d", q.MaxOffset(), tt.wantUnits)
			}
			checkUnits(t, readAll(t, q), tt.wantUnits)
			if n := len(queueFiles(t, q.dir)); n != tt.wantFiles {
				t.Fatalf("%d files, want %d", n, tt.wantFiles)
			}
			mustAppend(t, q, unitsFrom(tt.wantUnits, 3)...)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, dir, Options{UnitsPerFile: 4})
			checkUnits(t, readAll(t, s.Lookup("T", 0)), tt.wantUnits+3)
		})
	}
}

func TestTruncateAbove(t *testing.T) {
	tests := []struct {
		name      string
		phys      int64
		wantUnits int
		wantFiles int
	}{
		{"nothing above", 5000, 10, 3},
		{"at the last unit", 900, 9, 3},
		{"between units", 650, 7, 2},
		{"at a file boundary", 800, 8, 2},
		{"at the second file start", 400, 4, 1},
		{"at the first unit", 0, 0, 1},
		{"below everything", -10, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			buildQueue(t, dir)
			s := mustOpen(t, dir, Options{UnitsPerFile: 4})
			q := s.Lookup("T", 0)
			if err := q.TruncateAbove(tt.phys); err != nil {
				t.Fatal(err)
			}
			if q.MaxOffset() != int64(tt.wantUnits) {
				t.Fatalf("MaxOffset %d, want %d", q.MaxOffset(), tt.wantUnits)
			}
			checkUnits(t, readAll(t, q), tt.wantUnits)
			if n := len(queueFiles(t, q.dir)); n != tt.wantFiles {
				t.Fatalf("%d files, want %d", n, tt.wantFiles)
			}
			last, ok := q.LastUnit()
			if ok != (tt.wantUnits > 0) || (ok && last != unitsFrom(tt.wantUnits-1, 1)[0]) {
				t.Fatalf("LastUnit = %+v, %v", last, ok)
			}
			// Re-dispatch continues from the cut.
			mustAppend(t, q, unitsFrom(tt.wantUnits, 5)...)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, dir, Options{UnitsPerFile: 4})
			checkUnits(t, readAll(t, s.Lookup("T", 0)), tt.wantUnits+5)
		})
	}
}

func TestSearchByPhysOffset(t *testing.T) {
	dir := t.TempDir()
	buildQueue(t, dir) // unit i at commit-log offset i*100
	s := mustOpen(t, dir, Options{UnitsPerFile: 4})
	q := s.Lookup("T", 0)
	tests := []struct {
		phys int64
		want int64
	}{
		{-1, 0}, {0, 0}, {1, 1}, {99, 1}, {100, 1}, {399, 4}, {400, 4}, {401, 5}, {900, 9}, {901, 10}, {1 << 40, 10},
	}
	for _, tt := range tests {
		if got, err := q.SearchByPhysOffset(tt.phys); err != nil || got != tt.want {
			t.Errorf("SearchByPhysOffset(%d) = %d, %v; want %d", tt.phys, got, err, tt.want)
		}
	}
	empty := mustQueue(t, s, "E", 0)
	if got, err := empty.SearchByPhysOffset(10); err != nil || got != 0 {
		t.Errorf("empty queue search = %d, %v", got, err)
	}
}
