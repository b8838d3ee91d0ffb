package router

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/netloop/nsrvcodec"
)

// TestDocsRequestCodes: docs/operations.md's wheelctl table names request
// codes the broker (handlers) or the name server (nsrvcodec.ServedCodes)
// serves, or that its "does not serve (today: ...)" list names; and no
// code on that list is served.
func TestDocsRequestCodes(t *testing.T) {
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	m := regexp.MustCompile(`Requests the broker does not serve \(today: ([^)]*)\)`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatal(`docs/operations.md has no "Requests the broker does not serve (today: ...)" sentence`)
	}
	var unserved []int32
	for _, f := range regexp.MustCompile(`\d+`).FindAllString(m[1], -1) {
		n, _ := strconv.Atoi(f)
		unserved = append(unserved, int32(n))
	}
	if len(unserved) == 0 && strings.TrimSpace(m[1]) != "none" {
		t.Fatalf("today: %q, want codes or none", m[1])
	}
	served := func(code int32) bool {
		_, ok := handlers[code]
		return ok || slices.Contains(nsrvcodec.ServedCodes, code)
	}
	for _, code := range unserved {
		if served(code) {
			t.Errorf("docs say %d is not served, but it is", code)
		}
	}
	start := strings.Index(doc, "| command | requests | prints |")
	if start < 0 {
		t.Fatal("docs/operations.md has no wheelctl command table")
	}
	name := regexp.MustCompile(`[A-Z][A-Z_/]+ \((\d+)((?:[-/]\d+)?)`)
	checked := 0
	for _, row := range strings.Split(doc[start:], "\n")[2:] {
		if !strings.HasPrefix(row, "|") {
			break
		}
		cells := strings.Split(row, " | ")
		if len(cells) < 3 {
			continue
		}
		for _, mm := range name.FindAllStringSubmatch(cells[1], -1) {
			first, _ := strconv.Atoi(mm[1])
			codes := []int{first}
			if rest := mm[2]; rest != "" {
				second, _ := strconv.Atoi(rest[1:])
				if rest[0] == '-' {
					for c := first + 1; c <= second; c++ {
						codes = append(codes, c)
					}
				} else {
					codes = append(codes, second)
				}
			}
			for _, c := range codes {
				checked++
				if !served(int32(c)) && !slices.Contains(unserved, int32(c)) {
					t.Errorf("the wheelctl table names %s (%d), which neither the broker nor the name server serves and the docs do not list as not served", mm[0], c)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d codes found in the wheelctl table", checked)
	}
}
