package commitlog

import (
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGoldenSegments pins the on-disk format: a fixed sequence of appends
// must produce exactly the bytes in testdata/segments.golden (dissected
// entries plus a hex dump of every segment file). Run with -args -update after an
// intended format change and review the diff.
func TestGoldenSegments(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, dir, Options{SegmentSize: 256})
	// Segment 0: 100+100 then a blank marker (48 bytes left).
	// Segment 256: 128+124 (4 bytes left: no marker).
	// Segment 512: 36 with V2 magic.
	mustAppend(t, c, makeRecords(0, 100, 100))
	mustAppend(t, c, makeRecords(2, 124, 120))
	v2 := makeRecord(36, 4)
	binary.BigEndian.PutUint32(v2[4:], magicV2)
	mustAppend(t, c, [][]byte{v2})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# CommitLog golden file, SegmentSize 256. Regenerate: go test ./storage/commitlog -run TestGoldenSegments -args -update\n")
	for _, name := range segmentFiles(t, dir) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		base, _ := parseSegmentName(name)
		fmt.Fprintf(&b, "\nfile %s (%d bytes)\n", name, len(data))
		dissect(&b, data, base)
		b.WriteString(hex.Dump(data))
	}
	path := filepath.Join("testdata", "segments.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if got := b.String(); got != string(want) {
		t.Fatalf("segment files differ from %s; run with -update and review the diff\n%s", path, got)
	}
}

// dissect writes one line per entry of a segment file.
func dissect(b *strings.Builder, data []byte, base int64) {
	for pos := 0; pos+headerSize <= len(data); {
		size := binary.BigEndian.Uint32(data[pos:])
		magic := binary.BigEndian.Uint32(data[pos+4:])
		if magic == magicBlank {
			fmt.Fprintf(b, "  @%d blank marker, %d bytes to the segment end\n", base+int64(pos), size)
			return
		}
		end := pos + int(size)
		if end+crcSize > len(data) {
			fmt.Fprintf(b, "  @%d torn entry\n", base+int64(pos))
			return
		}
		fmt.Fprintf(b, "  @%d record %d bytes, magic %#08x, PHYSICALOFFSET %d, crc32c %#08x\n",
			base+int64(pos), size, magic, binary.BigEndian.Uint64(data[pos+physOffsetPos:]),
			binary.BigEndian.Uint32(data[end:]))
		pos = end + crcSize
	}
}
