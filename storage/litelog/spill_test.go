package litelog

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDecodeAll: a run of encoded records (the lite ack journal's body)
// comes back whole; a cut or a flipped byte is refused with ErrCorrupt.
func TestDecodeAll(t *testing.T) {
	var b []byte
	for _, r := range records() {
		b = Append(b, &r)
	}
	var got []Record
	if err := DecodeAll(b, func(r *Record) { got = append(got, *r) }); err != nil || !slices.Equal(got, records()) {
		t.Fatalf("DecodeAll: %v %v, want %v", got, err, records())
	}
	if err := DecodeAll(b[:len(b)-3], func(*Record) {}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("cut run: %v, want ErrCorrupt", err)
	}
	bad := slices.Clone(b)
	bad[12] ^= 0xff
	if err := DecodeAll(bad, func(*Record) {}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flipped byte: %v, want ErrCorrupt", err)
	}
}

func snap(lite string, offs ...int64) []Record {
	out := []Record{{Kind: KindEvict, Ms: 9, Parent: "p", Lite: lite}}
	for _, o := range offs {
		out = append(out, Record{Kind: KindMessage, Offset: o, Ms: 9, Parent: "p", Lite: lite})
	}
	return append(out, Record{Kind: KindAck, Offset: offs[0], Parent: "p", Lite: lite, Group: "g"})
}

// TestSpillNewestSnapshot: a lookup finds a lite topic's newest snapshot
// in its bucket, only for lite topics said to be evicted; a bucket grown
// past its live part is rewritten to it; OpenSpill starts empty.
func TestSpillNewestSnapshot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	s, err := OpenSpill(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put([][]Record{snap("a", 1, 2), snap("b", 3)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put([][]Record{snap("a", 2, 5)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put([][]Record{{{Kind: KindMessage, Parent: "p", Lite: "c"}}}); err == nil {
		t.Fatal("a snapshot without its Evict record was taken")
	}
	all := func(SpillKey) bool { return true }
	got, err := s.ReadBucket(Bucket("p", "a"), all)
	if err != nil || !slices.Equal(got[SpillKey{"p", "a"}], snap("a", 2, 5)) {
		t.Fatalf("bucket of a: %v %v, want its newest snapshot %v", got, err, snap("a", 2, 5))
	}
	want := func(lite string) func(p, l []byte) bool {
		return func(p, l []byte) bool { return string(p) == "p" && string(l) == lite }
	}
	got, err = s.Lookup(Bucket("p", "a"), want("a"), all)
	if err != nil || len(got) != 1 || !slices.Equal(got[SpillKey{"p", "a"}], snap("a", 2, 5)) {
		t.Fatalf("Lookup a: %v %v, want only its newest snapshot", got, err)
	}
	got, _ = s.ReadBucket(Bucket("p", "b"), func(k SpillKey) bool { return k.Lite != "b" })
	if _, ok := got[SpillKey{"p", "b"}]; ok {
		t.Fatal("b was returned though not evicted")
	}
	// Many evictions of one lite topic: the bucket is rewritten to the newest.
	b := Bucket("p", "a")
	for i := range 20000 {
		if err := s.Put([][]Record{snap("a", int64(i), int64(i+1))}); err != nil {
			t.Fatal(err)
		}
	}
	if s.sizes[b] <= spillRewriteBytes {
		t.Fatalf("bucket at %d bytes; the test wants it past %d", s.sizes[b], spillRewriteBytes)
	}
	got, err = s.Lookup(b, want("a"), all)
	if err != nil || !slices.Equal(got[SpillKey{"p", "a"}], snap("a", 19999, 20000)) {
		t.Fatalf("after many evictions: %v %v", got[SpillKey{"p", "a"}], err)
	}
	if fi, err := os.Stat(s.path(b)); err != nil || fi.Size() >= spillRewriteBytes || fi.Size() != s.sizes[b] {
		t.Fatalf("bucket not rewritten to its live part: %v %v (size %d)", fi, err, s.sizes[b])
	}
	n := 0
	if err := s.All(all, func([]Record) { n++ }); err != nil || n < 1 {
		t.Fatalf("All: %d snapshots, %v", n, err)
	}
	s2, err := OpenSpill(dir)
	if err != nil || s2.Size() != 0 {
		t.Fatalf("reopened spill store: %v, %d bytes; want empty", err, s2.Size())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("reopened spill store holds %d files", len(entries))
	}
}
