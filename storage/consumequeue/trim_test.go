package consumequeue

import (
	"errors"
	"slices"
	"testing"
)

// TestTrimBelow trims a queue of 35 units (unit i at commit-log offset
// i*100, 10 units per file) below various commit-log offsets.
func TestTrimBelow(t *testing.T) {
	tests := []struct {
		name      string
		clMins    []int64 // successive TrimBelow calls
		wantMin   int64
		wantFiles []string
	}{
		{"nothing below", []int64{0}, 0, []string{fileName(0), fileName(10), fileName(20), fileName(30)}},
		{"inside the first file", []int64{550}, 6, []string{fileName(0), fileName(10), fileName(20), fileName(30)}},
		{"first file boundary", []int64{1000}, 10, []string{fileName(10), fileName(20), fileName(30)}},
		{"between units", []int64{2050}, 21, []string{fileName(20), fileName(30)}},
		{"everything: the last file stays", []int64{1 << 40}, 35, []string{fileName(30)}},
		{"never backwards", []int64{2050, 300}, 21, []string{fileName(20), fileName(30)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{UnitsPerFile: 10})
			q := mustQueue(t, s, "T", 0)
			mustAppend(t, q, unitsFrom(0, 35)...)
			for _, m := range tt.clMins {
				r, err := q.TrimBelow(m)
				if err != nil {
					t.Fatalf("TrimBelow(%d): %v", m, err)
				}
				if r.MinOffset != q.MinOffset() {
					t.Fatalf("result min %d, queue min %d", r.MinOffset, q.MinOffset())
				}
			}
			if q.MinOffset() != tt.wantMin || q.MaxOffset() != 35 {
				t.Fatalf("min %d max %d, want %d 35", q.MinOffset(), q.MaxOffset(), tt.wantMin)
			}
			if got := queueFiles(t, q.dir); !slices.Equal(got, tt.wantFiles) {
				t.Fatalf("files %v, want %v", got, tt.wantFiles)
			}
			if tt.wantMin > 0 {
				if _, err := q.Read(tt.wantMin-1, 1); !errors.Is(err, ErrOutOfRange) {
					t.Fatalf("Read below the minimum: %v", err)
				}
			}
			got := readAll(t, q)
			if int64(len(got)) != 35-tt.wantMin || (len(got) > 0 && got[0] != unitsFrom(int(tt.wantMin), 1)[0]) {
				t.Fatalf("kept units %d from %+v", len(got), got)
			}
			if _, ok := q.LastUnit(); ok != (tt.wantMin < 35) {
				t.Fatalf("LastUnit present %v with min %d", ok, tt.wantMin)
			}
			// The writer goes on; TruncateAbove still cuts correctly.
			mustAppend(t, q, unitsFrom(35, 10)...)
			if err := q.TruncateAbove(40 * 100); err != nil {
				t.Fatal(err)
			}
			if q.MaxOffset() != 40 || q.MinOffset() != tt.wantMin {
				t.Fatalf("after append and truncate: min %d max %d", q.MinOffset(), q.MaxOffset())
			}
			// Reopened, the store knows only the files; the same trim gives
			// the same minimum again.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2 := mustOpen(t, dir, Options{UnitsPerFile: 10})
			q2 := s2.Lookup("T", 0)
			if _, err := s2.TrimBelow(tt.clMins[0]); err != nil {
				t.Fatal(err)
			}
			want := min(40, (tt.clMins[0]+99)/100) // units 0..39 sit at i*100
			if q2.MinOffset() != want || q2.MaxOffset() != 40 {
				t.Fatalf("reopened: min %d max %d, want %d 40", q2.MinOffset(), q2.MaxOffset(), want)
			}
		})
	}
}

// TestStoreTrimBelow trims several queues at once, one of them empty.
func TestStoreTrimBelow(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{UnitsPerFile: 10})
	a, b := mustQueue(t, s, "A", 0), mustQueue(t, s, "B", 1)
	mustQueue(t, s, "C", 0) // no units
	// A holds the even hundreds, B the odd ones.
	for i := 0; i < 20; i++ {
		mustAppend(t, a, Unit{Offset: int64(2*i) * 100, Size: 100})
		mustAppend(t, b, Unit{Offset: int64(2*i+1) * 100, Size: 100})
	}
	r, err := s.TrimBelow(2450)
	if err != nil {
		t.Fatal(err)
	}
	if a.MinOffset() != 13 || b.MinOffset() != 12 || r.Queues != 2 || r.Units != 25 || r.Files != 2 {
		t.Fatalf("A min %d, B min %d, result %+v", a.MinOffset(), b.MinOffset(), r)
	}
}
