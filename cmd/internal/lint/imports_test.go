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

// TestActorsDoNotImportNetloop is the layering rule: no production file
// under actors/ imports netloop/. The layers are actors below netloop: a
// stage takes typed requests and answers typed results, and knows neither
// the event loop nor a wire codec; the codecs (netloop/router for the
// broker, netloop/nsrvcodec for the name server, netloop/ctlwire for the
// controller, netloop/grpcgw for RocketMQ 5) translate, and the clients
// a stage calls out through (the registrar's name-server calls, the
// controller member's connection) are interfaces the stage defines and
// netloop implements. The list of exceptions this replaced went from 38
// files to none.
func TestActorsDoNotImportNetloop(t *testing.T) {
	const netloop = "github.com/wheelmq/wheelmq/netloop"
	var checked int
	walkGo(t, func(path string, f *ast.File, fset *token.FileSet) {
		rel := relPath(t, path)
		if !strings.HasPrefix(rel, "actors/") || strings.HasSuffix(rel, "_test.go") {
			return
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == netloop || strings.HasPrefix(p, netloop+"/") {
				t.Errorf("%s: imports %s: actors/ does not import netloop/ (wire codes are in actors/wirecode; "+
					"give the stage a type of its own and let the codec translate)", fset.Position(imp.Pos()), p)
			}
		}
	})
	if checked < 100 {
		t.Fatalf("checked only %d files under actors/: is the root %s right?", checked, root)
	}
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
