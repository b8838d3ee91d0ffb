package commitlog

import (
	"errors"
	"io"
	"testing"
)

// TestReadBlockMatchesRead scans a log with many small segments (so blank
// markers and segment ends occur) with ReadBlock at several block sizes and
// checks it sees exactly what Read sees.
func TestReadBlockMatchesRead(t *testing.T) {
	c, err := Open(t.TempDir(), Options{SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 300; i++ {
		rec := makeRecord(100+(i*37)%900, i)
		if _, err := c.Append([][]byte{rec}); err != nil {
			t.Fatal(err)
		}
	}
	var want []int64
	var wantRecs [][]byte
	for off := int64(0); ; {
		rec, next, err := c.Read(off)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, next-int64(len(rec))-crcSize)
		wantRecs = append(wantRecs, rec)
		off = next
	}
	for _, block := range []int{64, 200, 1000, 4096, 1 << 20} {
		var got []int64
		var gotRecs [][]byte
		for off := int64(0); ; {
			recs, offs, next, err := c.ReadBlock(off, block)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("block %d at %d: %v", block, off, err)
			}
			if len(recs) == 0 || next <= off {
				t.Fatalf("block %d at %d: no progress", block, off)
			}
			got = append(got, offs...)
			gotRecs = append(gotRecs, recs...)
			off = next
		}
		if len(got) != len(want) {
			t.Fatalf("block %d: %d records, want %d", block, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] || string(gotRecs[i]) != string(wantRecs[i]) {
				t.Fatalf("block %d: record %d at %d, want %d", block, i, got[i], want[i])
			}
		}
	}
}
