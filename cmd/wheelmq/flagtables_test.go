package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestFlagTables: README's flag table lists exactly wheelmq's flags, and
// every flag docs/operations.md's flag tables name exists.
func TestFlagTables(t *testing.T) {
	var usage bytes.Buffer
	if _, err := parseArgs([]string{"-h"}, env(nil), &usage); err != errHelp {
		t.Fatal(err)
	}
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`).FindAllStringSubmatch(usage.String(), -1) {
		if m[1] != "help" {
			flags = append(flags, m[1])
		}
	}
	if len(flags) < 40 {
		t.Fatalf("only %d flags in the help:\n%s", len(flags), usage.String())
	}
	slices.Sort(flags)
	readme := tableFlags(t, "../../README.md", "| flag | default | meaning |")
	slices.Sort(readme)
	readme = slices.Compact(readme)
	for _, f := range flags {
		if !slices.Contains(readme, f) {
			t.Errorf("README's flag table lacks --%s", f)
		}
	}
	for _, f := range readme {
		if !slices.Contains(flags, f) {
			t.Errorf("README's flag table names --%s, which wheelmq does not have", f)
		}
	}
	for _, header := range []string{"| flag | default | meaning |", "| knob | default | trade-off |"} {
		for _, f := range tableFlags(t, "../../docs/operations.md", header) {
			if !slices.Contains(flags, f) {
				t.Errorf("docs/operations.md's table %q names --%s, which wheelmq does not have", header, f)
			}
		}
	}
}

// tableFlags returns the flags (`--name`) in the first cell of the rows of
// every table of path whose header is header.
func tableFlags(t *testing.T, path, header string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flag := regexp.MustCompile("`--([a-z0-9-]+)")
	var out []string
	in, tables := false, 0
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, header):
			in = true
			tables++
		case in && strings.HasPrefix(line, "|"):
			cell := strings.Split(line, " | ")[0]
			for _, m := range flag.FindAllStringSubmatch(cell, -1) {
				out = append(out, m[1])
			}
		default:
			in = false
		}
	}
	if tables == 0 && strings.HasSuffix(path, "README.md") {
		t.Fatalf("%s has no table %q", path, header)
	}
	return out
}
