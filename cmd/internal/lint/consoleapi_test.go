package lint

import (
	"go/ast"
	"go/token"
	"path"
	"strconv"
	"strings"
	"testing"
)

// consoleAdminImporters are the console's production files allowed to
// import cmd/internal/admin (wheelctl's remoting admin client), with what
// for: none. The console reads the broker through the in-process broker
// API (actors/broker) and the stages' snapshots, never with admin requests
// to the broker's own port over loopback.
var consoleAdminImporters = map[string]string{}

// isConsoleFile says whether rel (a production file) is the console's:
// its HTTP side (cmd/internal/console) or its Backend in the broker
// process (cmd/internal/process/console*.go).
func isConsoleFile(rel string) bool {
	if strings.HasSuffix(rel, "_test.go") {
		return false
	}
	return strings.HasPrefix(rel, "cmd/internal/console/") ||
		(path.Dir(rel) == "cmd/internal/process" && strings.HasPrefix(path.Base(rel), "console"))
}

// TestConsoleReadsThroughTheAPI is the rule that the console does not
// send admin requests over loopback, as a ratchet over
// consoleAdminImporters.
func TestConsoleReadsThroughTheAPI(t *testing.T) {
	const admin = "github.com/wheelmq/wheelmq/cmd/internal/admin"
	found := map[string]bool{}
	var checked int
	walkGo(t, func(p string, f *ast.File, fset *token.FileSet) {
		rel := relPath(t, p)
		if !isConsoleFile(rel) {
			return
		}
		checked++
		for _, imp := range f.Imports {
			if ip, _ := strconv.Unquote(imp.Path.Value); ip != admin {
				continue
			}
			found[rel] = true
			if _, ok := consoleAdminImporters[rel]; !ok {
				t.Errorf("%s: imports %s: the console reads the broker through the broker API (actors/broker, "+
					"cmd/internal/process/console_admin.go's caller, core and await), not with admin requests over loopback",
					fset.Position(imp.Pos()), admin)
			}
		}
	})
	if checked < 10 {
		t.Fatalf("checked only %d console files: is the root %s right?", checked, root)
	}
	ratchetGone(t, consoleAdminImporters, found, "cmd/internal/admin", "consoleAdminImporters in consoleapi_test.go")
}
