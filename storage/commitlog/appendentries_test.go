package commitlog

import (
	"bytes"
	"errors"
	"testing"
)

func TestAppendEntries(t *testing.T) {
	c := mustOpen(t, t.TempDir(), Options{SegmentSize: 64 << 10})
	var recs [][]byte
	for i := range 5 {
		recs = append(recs, makeRecord(100+i*10, i))
	}
	offs, err := c.Append(recs)
	if err != nil {
		t.Fatal(err)
	}
	end := offs[4] + int64(len(recs[4])) + crcSize
	prefix := []byte("head")
	dst := make([]byte, len(prefix), 4096)
	copy(dst, prefix)
	got, n, err := c.AppendEntries(dst, offs[1], end-offs[1])
	if err != nil || n != 4 {
		t.Fatalf("AppendEntries: %d records, %v", n, err)
	}
	want := append([]byte("head"), bytes.Join(recs[1:], nil)...)
	if !bytes.Equal(got, want) {
		t.Fatalf("records differ")
	}
	if &got[0] != &dst[0] {
		t.Errorf("dst had room but was reallocated")
	}
	allocs := testing.AllocsPerRun(20, func() {
		if _, _, err := c.AppendEntries(dst[:4], offs[0], end-offs[0]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("%v allocations per call with room in dst", allocs)
	}
	// Short dst: grown, prefix kept.
	got, _, err = c.AppendEntries([]byte("x"), offs[0], end-offs[0])
	if err != nil || !bytes.Equal(got, append([]byte("x"), bytes.Join(recs, nil)...)) {
		t.Fatalf("grown dst: %v", err)
	}
	for _, tt := range []struct {
		name     string
		off, len int64
		want     error
	}{
		{"past the end", offs[4], end - offs[4] + 1, ErrOutOfRange},
		{"not an entry boundary", offs[1] + 4, end - offs[1] - 4, ErrCorrupt},
		{"cut inside an entry", offs[1], end - offs[1] - 2, ErrCorrupt},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, n, err := c.AppendEntries(dst[:2], tt.off, tt.len)
			if !errors.Is(err, tt.want) || n != 0 || len(out) != 2 {
				t.Fatalf("got %d records, %d bytes, %v; want %v and dst unchanged", n, len(out), err, tt.want)
			}
		})
	}
}
