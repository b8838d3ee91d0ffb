package ctlwire

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"testing"
)

// docs/compatibility.md's "Controller codes" table is Permissions, and
// every served code has a rule.
func TestPermissionsDocumented(t *testing.T) {
	for _, code := range ServedCodes {
		if r, ok := Permissions[code]; !ok || r.Needs == nil || r.Doc == "" {
			t.Errorf("code %d served without a rule", code)
		}
	}
	for code := range Permissions {
		if !slices.Contains(ServedCodes, code) {
			t.Errorf("rule for %d, which is not served", code)
		}
	}
	doc, err := os.ReadFile("../../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := regexp.MustCompile("(?s)### Controller codes [^\n]*\n(.*?)\n\n").FindSubmatch(doc)
	if sec == nil {
		t.Fatal("no Controller codes section")
	}
	got := map[int32]string{}
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \| [A-Z0-9_]+ \| (.*) \|$`).FindAllSubmatch(sec[1], -1) {
		var code int32
		fmt.Sscan(string(m[1]), &code)
		got[code] = string(m[2])
	}
	if len(got) != len(Permissions) {
		t.Errorf("docs list %d codes, the table has %d", len(got), len(Permissions))
	}
	for code, r := range Permissions {
		if got[code] != r.Doc {
			t.Errorf("code %d: docs say %q, the table %q", code, got[code], r.Doc)
		}
	}
}
