package meta

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/")

// checkGolden compares got with testdata/name, or rewrites it under -rewrite.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -rewrite to create it)", err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s differs (go test -rewrite to update)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// noTempFiles fails if dir holds a leftover temporary file.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	for _, n := range dirEntries(t, dir) {
		if strings.Contains(n, ".tmp-") {
			t.Fatalf("temporary file %s left in %s", n, dir)
		}
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
