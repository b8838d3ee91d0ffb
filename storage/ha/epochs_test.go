package ha

import (
	"errors"
	"math/rand"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs"
	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
)

func TestEpochsAppendReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ha")
	e, err := OpenEpochs(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Last(); ok {
		t.Fatal("new file has entries")
	}
	for _, a := range []Epoch{{1, 0}, {2, 100}, {2, 100}, {5, 100}, {7, 900}} {
		if err := e.Append(a.Epoch, a.Start); err != nil {
			t.Fatalf("Append(%+v): %v", a, err)
		}
	}
	for _, bad := range []Epoch{{7, 1000}, {6, 1000}, {8, 800}} {
		if err := e.Append(bad.Epoch, bad.Start); !errors.Is(err, ErrEpochOrder) {
			t.Fatalf("Append(%+v) = %v, want ErrEpochOrder", bad, err)
		}
	}
	want := []Epoch{{1, 0}, {2, 100}, {5, 100}, {7, 900}}
	e2, err := OpenEpochs(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := e2.Entries(); !slices.Equal(got, want) {
		t.Fatalf("reopened %v, want %v", got, want)
	}
	if err := e2.TruncateAfter(99); err != nil {
		t.Fatal(err)
	}
	if got := e2.Entries(); !slices.Equal(got, want[:1]) {
		t.Fatalf("after TruncateAfter(99): %v", got)
	}
	if err := e2.Reset([]Epoch{{3, 0}, {2, 5}}); !errors.Is(err, ErrEpochOrder) {
		t.Fatalf("Reset out of order: %v", err)
	}
	if err := e2.Reset(want[:2]); err != nil {
		t.Fatal(err)
	}
	e3, err := OpenEpochs(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := e3.Last(); l != want[1] {
		t.Fatalf("Last %+v", l)
	}
}

func TestEpochFileTornTail(t *testing.T) {
	b := EncodeEpochFile([]Epoch{{1, 0}, {2, 10}, {3, 20}})
	for cut := len(b); cut >= epochHeaderSize; cut-- {
		got, err := DecodeEpochFile(b[:cut])
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if want := (cut - epochHeaderSize) / epochEntrySize; len(got) != want {
			t.Fatalf("cut %d: %d entries, want %d", cut, len(got), want)
		}
	}
	bad := slices.Clone(b)
	bad[epochHeaderSize+epochEntrySize+3] ^= 0x40 // second entry
	if got, _ := DecodeEpochFile(bad); len(got) != 1 {
		t.Fatalf("damaged second entry: %v", got)
	}
	if _, err := DecodeEpochFile([]byte("nonsense-file")); !errors.Is(err, ErrEpochFile) {
		t.Fatalf("bad header: %v", err)
	}
}

// TestEpochsPowerCut: after a crash at any point, the file holds the list
// before or after the last change, never a mix.
func TestEpochsPowerCut(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	fs := crashfs.New()
	e, err := OpenEpochs(fs, "/d/ha")
	if err != nil {
		t.Fatal(err)
	}
	var durable []Epoch
	for i := int64(1); i <= 30; i++ {
		before := e.Entries()
		if err := e.Append(i, i*100); err != nil {
			t.Fatal(err)
		}
		after := e.Entries()
		durable = after
		var crashed *crashfs.FS
		if rng.Intn(2) == 0 {
			crashed = fs.CrashRandom(rng)
		} else {
			crashed = fs.Crash()
		}
		got, err := OpenEpochs(crashed, "/d/ha")
		if err != nil {
			t.Fatal(err)
		}
		if g := got.Entries(); !slices.Equal(g, after) && !slices.Equal(g, before) {
			t.Fatalf("after crash %v; want %v or %v", g, before, after)
		}
	}
	b, err := vfs.ReadFile(fs.Crash(), "/d/ha/epochs")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := DecodeEpochFile(b); !slices.Equal(got, durable) {
		t.Fatalf("strict crash kept %v, want %v", got, durable)
	}
}
