package brokerconf

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsListEveryKey: docs/operations.md's two broker.conf tables list
// exactly the keys of Mapping and of Ignore, each with its reason.
func TestDocsListEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	table := func(header string) []string {
		at := strings.Index(text, header)
		if at < 0 {
			t.Fatalf("docs/operations.md has no table %q", header)
		}
		var rows []string
		for _, l := range strings.Split(text[at:], "\n")[2:] {
			if !strings.HasPrefix(l, "|") {
				break
			}
			rows = append(rows, l)
		}
		return rows
	}
	key := regexp.MustCompile("`([A-Za-z0-9]+)`")
	var mapped []string
	for _, row := range table("| broker.conf key | wheelmq flag |") {
		cell := strings.Split(row, "|")[1]
		for _, m := range key.FindAllStringSubmatch(cell, -1) {
			mapped = append(mapped, m[1])
		}
	}
	var want []string
	for _, r := range Mapping {
		want = append(want, r.Key)
	}
	if !slices.Equal(mapped, want) {
		t.Errorf("mapping table lists %v, Mapping has %v", mapped, want)
	}
	var ign []string
	for _, row := range table("| broker.conf keys ignored on purpose | why |") {
		cells := strings.Split(row, "|")
		for _, m := range key.FindAllStringSubmatch(cells[1], -1) {
			ign = append(ign, m[1])
			if k, ok := ignored(m[1]); !ok || strings.TrimSpace(cells[2]) != k.Reason {
				t.Errorf("%s: docs give the reason %q, Ignore %q", m[1], strings.TrimSpace(cells[2]), k.Reason)
			}
		}
	}
	want = want[:0]
	for _, k := range Ignore {
		want = append(want, k.Key)
	}
	if !slices.Equal(ign, want) {
		t.Errorf("ignore table lists %v, Ignore has %v", ign, want)
	}
}
