package consumequeue

import (
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGoldenUnits pins the unit file format: fixed units written with 3
// units per file must produce exactly testdata/units.golden. Run with
// -args -update after an intended format change and review the diff.
func TestGoldenUnits(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{UnitsPerFile: 3})
	q := mustQueue(t, s, "TopicTest", 0)
	mustAppend(t, q,
		Unit{Offset: 0, Size: 92, TagsCode: 0},
		Unit{Offset: 96, Size: 200, TagsCode: 2598919},          // "TagA".hashCode()
		Unit{Offset: 300, Size: 1024, TagsCode: -1},             // negative hash, widened
		Unit{Offset: 1 << 32, Size: 4 << 20, TagsCode: 1 << 40}, // big offset; timestamp-like tag
		Unit{Offset: 1<<62 + 7, Size: 1<<31 - 1, TagsCode: -1 << 63},
	)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("# ConsumeQueue golden file, UnitsPerFile 3. Regenerate: go test ./storage/consumequeue -run TestGoldenUnits -args -update\n")
	qdir := filepath.Join(dir, "TopicTest", "0")
	for _, name := range queueFiles(t, qdir) {
		data, err := os.ReadFile(filepath.Join(qdir, name))
		if err != nil {
			t.Fatal(err)
		}
		base, _ := parseFileName(name)
		fmt.Fprintf(&b, "\nfile TopicTest/0/%s (%d bytes)\n", name, len(data))
		for i := 0; i+UnitSize <= len(data); i += UnitSize {
			u := decodeUnit(data[i:])
			fmt.Fprintf(&b, "  unit %d: offset %d size %d tags %d\n", base+int64(i/UnitSize), u.Offset, u.Size, u.TagsCode)
		}
		b.WriteString(hex.Dump(data))
	}
	path := filepath.Join("testdata", "units.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -args -update to create)", err)
	}
	if got := b.String(); got != string(want) {
		t.Fatalf("unit files differ from %s; run with -args -update and review the diff\n%s", path, got)
	}
}
