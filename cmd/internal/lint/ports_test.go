package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../../.."

// pickerNames are the names port pickers went by.
var pickerNames = map[string]bool{"FreeAddr": true, "freeAddr": true, "freePort": true, "FreePort": true, "freeLoopback": true}

// TestNoPortPicking fails on a listener opened on port 0 whose only uses
// are its address and its Close (the pick-then-bind race), and on a
// function named like the port pickers that were removed.
func TestNoPortPicking(t *testing.T) {
	var checked int
	walkGo(t, func(path string, f *ast.File, fset *token.FileSet) {
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if pickerNames[n.Name.Name] {
					t.Errorf("%s: func %s: pick-then-bind port helpers are gone; hold a port with netloop/portres or bind port 0 in the process", fset.Position(n.Pos()), n.Name.Name)
				}
				if n.Body != nil {
					checkBody(t, fset, n.Body)
				}
			case *ast.FuncLit:
				checkBody(t, fset, n.Body)
			}
			return true
		})
	})
	if checked < 100 {
		t.Fatalf("checked only %d files: is the root %s right?", checked, root)
	}
}

// checkBody reports the listeners opened on port 0 in body that are only
// closed and asked for their address.
func checkBody(t *testing.T, fset *token.FileSet, body *ast.BlockStmt) {
	t.Helper()
	for _, st := range body.List {
		as, ok := st.(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 || len(as.Lhs) == 0 {
			continue
		}
		call, ok := as.Rhs[0].(*ast.CallExpr)
		if !ok || !isPortZeroListen(call) {
			continue
		}
		id, ok := as.Lhs[0].(*ast.Ident)
		if !ok || id.Name == "_" {
			continue
		}
		closes, addrs, other := uses(body, id.Name, as)
		if closes > 0 && addrs > 0 && other == 0 {
			t.Errorf("%s: %s is opened on port 0, asked for its address and closed: a pick-then-bind port race; hold the port with netloop/portres instead",
				fset.Position(as.Pos()), id.Name)
		}
	}
}

// isPortZeroListen reports a call net.Listen("tcp...", "<host>:0").
func isPortZeroListen(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Listen" || len(call.Args) != 2 {
		return false
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "net" {
		return false
	}
	lit, ok := call.Args[1].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return false
	}
	s, err := strconv.Unquote(lit.Value)
	return err == nil && strings.HasSuffix(s, ":0")
}

// uses counts name's uses in body outside its defining statement def:
// name.Close(), name.Addr(), and anything else.
func uses(body *ast.BlockStmt, name string, def ast.Node) (closes, addrs, other int) {
	ast.Inspect(body, func(n ast.Node) bool {
		if n == def {
			return false
		}
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == name {
				switch sel.Sel.Name {
				case "Close":
					closes++
				case "Addr":
					addrs++
				default:
					other++
				}
				return false
			}
		}
		if id, ok := n.(*ast.Ident); ok && id.Name == name {
			other++ // passed on, returned, stored: someone else may serve it
		}
		return true
	})
	return closes, addrs, other
}

// walkGo visits every Go file of the tree (the natsbench module too),
// skipping node_modules and testdata; the tree is parsed once per test
// binary and shared by the rules.
func walkGo(t *testing.T, visit func(path string, f *ast.File, fset *token.FileSet)) {
	t.Helper()
	tree.once.Do(func() { tree.files, tree.err = parseTree() })
	if tree.err != nil {
		t.Fatal(tree.err)
	}
	for _, pf := range tree.files {
		visit(pf.path, pf.f, tree.fset)
	}
}

// tree is the parsed source tree.
var tree struct {
	once  sync.Once
	fset  *token.FileSet
	files []parsedFile
	err   error
}

// parsedFile is one parsed Go file.
type parsedFile struct {
	path string
	f    *ast.File
}

// parseTree parses every Go file under root.
func parseTree() ([]parsedFile, error) {
	tree.fset = token.NewFileSet()
	var out []parsedFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(tree.fset, path, src, 0)
		if err != nil {
			return err
		}
		out = append(out, parsedFile{path: path, f: f})
		return nil
	})
	return out, err
}
