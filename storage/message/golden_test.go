package message

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/")

// hexLines formats b as lines of 16 bytes of lower-case hex.
func hexLines(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 {
		n := min(len(b), 16)
		sb.WriteString(hex.EncodeToString(b[:n]))
		sb.WriteByte('\n')
		b = b[n:]
	}
	return sb.String()
}

// readHexFile decodes a hex golden file, ignoring whitespace.
func readHexFile(t testing.TB, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.Join(strings.Fields(string(raw)), ""))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

// checkGolden compares got with the file, or rewrites it under -rewrite.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -rewrite to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs (go test -rewrite to update)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestGoldenRecords(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
	}{
		{"record_v4", sampleRecord()},
		{"record_v6", sampleRecordV6()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := tt.rec.AppendTo(nil)
			hexPath := filepath.Join("testdata", tt.name+".hex")
			checkGolden(t, hexPath, hexLines(enc))
			if !bytes.Equal(readHexFile(t, hexPath), enc) {
				t.Fatal("hex golden does not decode to the encoding")
			}
			var dump strings.Builder
			if err := Dump(&dump, enc); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", tt.name+".txt"), dump.String())
		})
	}
}
