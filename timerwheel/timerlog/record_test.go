package timerlog

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// sampleRecords are the records of the golden file and the fuzz seeds.
func sampleRecords() []Record {
	return []Record{
		{Seq: 1, Kind: KindNormal, Flags: FlagCommit, Slot: 170000000000, DeliverMs: 1700000000123,
			EffMs: 1700000000123, AddedMs: 1699999990000, CLOffset: 4096, CQOffset: 7, KeyHash: 0x0123456789abcdef, Size: 312},
		{Seq: 2, Prev: 1, Kind: KindCancel, Flags: FlagCommit | FlagFar, Slot: 2833333, DeliverMs: 1700000000123,
			EffMs: 1699999999122, AddedMs: 1699999990500, CLOffset: 8192, CQOffset: 8, KeyHash: 0x0123456789abcdef, Size: 280},
		{Seq: 3, Kind: KindNormal, Flags: FlagCopy | FlagFar | FlagRolled, Slot: 2886000, DeliverMs: 1731536000000,
			EffMs: 1731536000000, AddedMs: 1699999991000, CLOffset: 12288, CQOffset: 9, Size: 300},
		Mark(KindRelinkMark, true, 2833333, 0, 0, 0).withSeq(4, FlagCommit),
	}
}

// fixCRC recomputes the checksum of an encoded record in place.
func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offLen:], castagnoli))
}

func (r Record) withSeq(seq uint64, f Flags) Record {
	r.Seq = seq
	r.Flags |= f
	return r
}

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range sampleRecords() {
		t.Run(fmt.Sprint(r.Seq), func(t *testing.T) {
			b := r.AppendEncode(nil)
			if len(b) != RecordSize {
				t.Fatalf("encoded %d bytes", len(b))
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if got != r {
				t.Fatalf("round trip\n got %+v\nwant %+v", got, r)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	good := sampleRecords()[0].AppendEncode(nil)
	reseal := func(b []byte) []byte { // recompute the crc so only the field is wrong
		r := append([]byte(nil), b...)
		fixCRC(r)
		return r
	}
	tests := []struct {
		name string
		mut  func([]byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:RecordSize-1] }},
		{"long", func(b []byte) []byte { return append(b, 0) }},
		{"crc", func(b []byte) []byte { b[0] ^= 1; return b }},
		{"payload bit", func(b []byte) []byte { b[50] ^= 0x10; return b }},
		{"length field", func(b []byte) []byte { b[offLen+1] = 87; return reseal(b) }},
		{"version", func(b []byte) []byte { b[offVersion] = 2; return reseal(b) }},
		{"kind 0", func(b []byte) []byte { b[offKind] = 0; return reseal(b) }},
		{"kind 9", func(b []byte) []byte { b[offKind] = 9; return reseal(b) }},
		{"flags", func(b []byte) []byte { b[offFlags] = 0x80; return reseal(b) }},
		{"reserved", func(b []byte) []byte { b[offReserved+1] = 1; return reseal(b) }},
		{"seq 0", func(b []byte) []byte { clear(b[offSeq : offSeq+8]); return reseal(b) }},
		{"prev not before seq", func(b []byte) []byte { copy(b[offPrev:offPrev+8], b[offSeq:offSeq+8]); return reseal(b) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mut(append([]byte(nil), good...))
			if _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode = %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestRecordGolden pins the byte layout: a change shows up as a text diff
// of testdata/records.golden (rewrite with -update after a format bump).
func TestRecordGolden(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("# TimerLog records, format version 1: fields, then the 88 encoded bytes.\n")
	for _, r := range sampleRecords() {
		fmt.Fprintf(&sb, "\nseq=%d prev=%d kind=%s flags=%#x slot=%d deliverMs=%d effMs=%d addedMs=%d clOffset=%d cqOffset=%d keyHash=%#x size=%d\n",
			r.Seq, r.Prev, r.Kind, uint8(r.Flags), r.Slot, r.DeliverMs, r.EffMs, r.AddedMs, r.CLOffset, r.CQOffset, r.KeyHash, r.Size)
		sb.WriteString(hex.Dump(r.AppendEncode(nil)))
	}
	path := filepath.Join("testdata", "records.golden")
	if *update {
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(want, []byte(sb.String())) {
		t.Fatalf("encoding differs from %s:\n%s", path, sb.String())
	}
}

// FuzzDecode feeds arbitrary bytes to the record decoder: it must not
// panic, and whatever it accepts must re-encode to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(r.AppendEncode(nil))
	}
	f.Add([]byte{})
	f.Add(make([]byte, RecordSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if again := r.AppendEncode(nil); !bytes.Equal(again, b) {
			t.Fatalf("re-encode differs:\n%x\n%x", again, b)
		}
	})
}
