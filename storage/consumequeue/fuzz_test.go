package consumequeue

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// FuzzLoad writes arbitrary bytes as a queue's last unit file (after a full,
// valid first file when mode&1 is set) and checks that Open never panics or
// fails, that every loaded unit is sane and ordered, and that the queue takes
// appends and reopens unchanged.
func FuzzLoad(f *testing.F) {
	const upf = 4
	var full []byte
	for _, u := range unitsFrom(0, upf) {
		full = appendUnit(full, u)
	}
	var next []byte
	for _, u := range unitsFrom(upf, 3) {
		next = appendUnit(next, u)
	}
	for mode := uint8(0); mode < 2; mode++ {
		f.Add(full, mode)
		f.Add(next, mode)
		f.Add(next[:45], mode)
		f.Add(append(append([]byte(nil), next...), make([]byte, 20)...), mode)
		f.Add(append(append([]byte(nil), full...), next...), mode)
		f.Add([]byte{}, mode)
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		dir := t.TempDir()
		qdir := filepath.Join(dir, "T", "0")
		if err := os.MkdirAll(qdir, 0o755); err != nil {
			t.Fatal(err)
		}
		base := int64(0)
		if mode&1 != 0 {
			base = upf
			if err := os.WriteFile(filepath.Join(qdir, fileName(0)), full, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(qdir, fileName(base)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		opts := Options{UnitsPerFile: upf, FS: vfstest.NoSyncFS{}}
		s, err := Open(dir, opts)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		q := s.Lookup("T", 0)
		if q == nil {
			t.Fatal("queue not loaded")
		}
		units := readAll(t, q)
		if int64(len(units)) != q.MaxOffset() || q.MaxOffset() < base || q.MaxOffset() > base+upf {
			t.Fatalf("%d units, MaxOffset %d", len(units), q.MaxOffset())
		}
		for i, u := range units {
			if reason := checkUnit(u, Unit{}, false); reason != "" {
				t.Fatalf("unit %d: %s", i, reason)
			}
			if i > 0 && u.Offset <= units[i-1].Offset {
				t.Fatalf("unit %d not ordered", i)
			}
		}
		phys := int64(0)
		if len(units) > 0 {
			phys = units[len(units)-1].Offset + 1
		}
		if phys > 1<<62 {
			_ = s.Close()
			return // no room above for more units
		}
		extra := makeUnits(0, 2, phys)
		if err := q.Append(extra...); err != nil {
			t.Fatalf("Append after load: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, err = Open(dir, opts)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer s.Close()
		if got := readAll(t, s.Lookup("T", 0)); len(got) != len(units)+2 {
			t.Fatalf("%d units after reopen, want %d", len(got), len(units)+2)
		}
	})
}
