package lint

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// netloopImporters are the production files under actors/ that import
// netloop/ today, with what they use it for. The list only shrinks: the
// test fails when a file not listed imports netloop/ (the layers are
// actors below netloop: a stage does not know the event loop or the
// remoting codec), and when a listed file no longer does (take it off).
var netloopImporters = map[string]string{
	// *remoting.Command as the stage's request and answer (the remoting
	// codec's message is the name server's and controller's API).
	"actors/controller/authz.go":                  "auth.Table rules by request code",
	"actors/controller/controller.go":             "*remoting.Command requests and answers",
	"actors/controller/handlers.go":               "*remoting.Command handlers",
	"actors/controller/stage.go":                  "*remoting.Command answers",
	"actors/controller/wire.go":                   "*remoting.Command answers",
	"actors/controller/raftsec.go":                "netloop.LoopbackListen",
	"actors/controller/controllertest/cluster.go": "netloop.Server for the test cluster",
	"actors/controller/member/loop.go":            "remoting.Client to the controller",
	"actors/controller/member/member.go":          "remoting.Client, remoting.Field signing",
	"actors/registrar/calls.go":                   "remoting.Client to the name servers",
	"actors/registrar/registrar.go":               "*remoting.Command, auth.Credentials",
	// The broker's stages answering over the connection.
	"actors/clients/clients.go":   "netloop.Conn, remoting.NewRequest (NOTIFY_CONSUMER_IDS_CHANGED)",
	"actors/clients/invoke.go":    "*remoting.Command relayed to a client",
	"actors/clients/producers.go": "*remoting.Command (CHECK_TRANSACTION_STATE)",
	"actors/txcheck/records.go":   "remoting.NewRequest (CHECK_TRANSACTION_STATE)",
	// ACL types and admin bodies.
	"actors/aclfile/aclfile.go": "auth.PlainACL",
	"actors/pipeline/config.go": "netloop defaults, auth.Guard, remoting.DefaultMaxFrame",
}

// TestActorsDoNotImportNetloop is the layering rule, as a ratchet over
// netloopImporters.
func TestActorsDoNotImportNetloop(t *testing.T) {
	const netloop = "github.com/wheelmq/wheelmq/netloop"
	found := map[string]bool{}
	var checked int
	walkGo(t, func(path string, f *ast.File, fset *token.FileSet) {
		rel := relPath(t, path)
		if !strings.HasPrefix(rel, "actors/") || strings.HasSuffix(rel, "_test.go") {
			return
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p != netloop && !strings.HasPrefix(p, netloop+"/") {
				continue
			}
			found[rel] = true
			if _, ok := netloopImporters[rel]; !ok {
				t.Errorf("%s: imports %s: actors/ does not import netloop/ (wire codes are in actors/wirecode; "+
					"give the stage a type of its own and let the codec translate)", fset.Position(imp.Pos()), p)
			}
		}
	})
	if checked < 100 {
		t.Fatalf("checked only %d files under actors/: is the root %s right?", checked, root)
	}
	ratchetGone(t, netloopImporters, found, "netloop/", "netloopImporters in imports_test.go")
}

// ratchetGone fails the test for every file of allowed (an allow-list of
// a ratchet) that found says no longer imports what, so that the list
// only shrinks: list names the list and its file.
func ratchetGone[V any](t *testing.T, allowed map[string]V, found map[string]bool, what, list string) {
	t.Helper()
	var gone []string
	for rel := range allowed {
		if !found[rel] {
			gone = append(gone, rel)
		}
	}
	sort.Strings(gone)
	for _, rel := range gone {
		t.Errorf("%s no longer imports %s (or is gone): take it off %s", rel, what, list)
	}
}

// relPath is path relative to the repository's root, with slashes.
func relPath(t *testing.T, path string) string {
	t.Helper()
	rel, err := filepath.Rel(root, path)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}
