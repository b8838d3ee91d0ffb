package consumequeue

import (
	"os"
	"path/filepath"
	"testing"
)

// makeUnits returns n units whose commit-log offsets start at phys and grow
// by 100; TagsCode numbers them from seq.
func makeUnits(seq, n int, phys int64) []Unit {
	out := make([]Unit, n)
	for i := range out {
		out[i] = Unit{Offset: phys + int64(i)*100, Size: int32(92 + (seq+i)%50), TagsCode: int64(seq + i)}
	}
	return out
}

// unitsFrom returns the first n units of the standard sequence (unit i at
// commit-log offset i*100).
func unitsFrom(seq, n int) []Unit { return makeUnits(seq, n, int64(seq)*100) }

// mustOpen opens a store and closes it at the end of the test.
func mustOpen(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// mustQueue returns a queue or fails the test.
func mustQueue(t testing.TB, s *Store, topic string, id int32) *Queue {
	t.Helper()
	q, err := s.Queue(topic, id)
	if err != nil {
		t.Fatalf("Queue(%s, %d): %v", topic, id, err)
	}
	return q
}

// mustAppend appends units or fails the test.
func mustAppend(t testing.TB, q *Queue, units ...Unit) {
	t.Helper()
	if err := q.Append(units...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

// readAll reads every unit of q.
func readAll(t testing.TB, q *Queue) []Unit {
	t.Helper()
	us, err := q.Read(q.MinOffset(), int(q.MaxOffset()-q.MinOffset()))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return us
}

// checkUnits asserts that got equals the standard sequence 0..n-1.
func checkUnits(t testing.TB, got []Unit, n int) {
	t.Helper()
	want := unitsFrom(0, n)
	if len(got) != n {
		t.Fatalf("got %d units, want %d", len(got), n)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("unit %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// queueFiles lists the unit files of a queue directory.
func queueFiles(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if _, ok := parseFileName(e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	return out
}

// unitPath returns the path of a unit file of queue topic/0.
func unitPath(dir, topic string, base int64) string {
	return filepath.Join(dir, topic, "0", fileName(base))
}
