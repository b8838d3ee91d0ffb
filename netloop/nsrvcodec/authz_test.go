package nsrvcodec

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// No silent default-allow: the served codes are exactly the codes with a
// rule, and every other code is answered REQUEST_CODE_NOT_SUPPORTED (so
// that ServedCodes cannot fall behind Decode).
func TestServedCodesHaveRules(t *testing.T) {
	for _, code := range ServedCodes {
		if r, ok := Permissions[code]; !ok || r.Needs == nil || r.Doc == "" {
			t.Errorf("request code %d is served without a rule", code)
		}
	}
	for code := range Permissions {
		if !slices.Contains(ServedCodes, code) {
			t.Errorf("rule for %d, which is not served", code)
		}
	}
	reg := namesrv.NewRegistry()
	for code := int32(0); code < 5000; code++ {
		if slices.Contains(ServedCodes, code) {
			continue
		}
		resp := handle(reg, remoting.NewRequest(code, map[string]string{"topic": "T"}, nil), time.Now())
		if resp.Code != remoting.RequestCodeNotSupported {
			t.Errorf("code %d is answered %d but is not in ServedCodes", code, resp.Code)
		}
	}
}

// docs/compatibility.md's "Name server port" table is the table.
func TestPermissionsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := regexp.MustCompile(`(?s)### Name server port\n(.*?)\n\n`).FindSubmatch(doc)
	if sec == nil {
		t.Fatal("no Name server port section")
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
