package lint

import (
	"go/ast"
	"go/token"
	"regexp"
	"strings"
	"testing"
)

// wirecodeDir is the one place RocketMQ's wire codes are defined.
const wirecodeDir = "actors/wirecode/"

// codeLike is a constant's name that says it is a wire code of its own:
// Code<Name> or code<Name>.
var codeLike = regexp.MustCompile(`^[cC]ode[A-Z]`)

// TestWireCodesDefinedOnce fails on a constant outside actors/wirecode
// that gives a wire code a number: named as one of actors/wirecode's codes
// (in any case) or as Code<Name>/code<Name>, with an integer literal for its value. A
// package that wants its own name for a code declares it from
// actors/wirecode (const CodeNoMessage = wirecode.PullNotFound), so that
// the number exists once.
func TestWireCodesDefinedOnce(t *testing.T) {
	names := map[string]bool{}
	var all []constSpec
	walkGo(t, func(path string, f *ast.File, fset *token.FileSet) {
		rel := relPath(t, path)
		if strings.HasSuffix(rel, "_test.go") {
			return
		}
		for _, c := range literalConsts(f) {
			if strings.HasPrefix(rel, wirecodeDir) {
				names[strings.ToLower(c.name)] = true
				continue
			}
			c.pos = fset.Position(c.node.Pos()).String()
			all = append(all, c)
		}
	})
	if len(names) < 100 {
		t.Fatalf("found only %d codes in %s: is the root %s right?", len(names), wirecodeDir, root)
	}
	for _, c := range all {
		if names[strings.ToLower(c.name)] || codeLike.MatchString(c.name) {
			t.Errorf("%s: const %s = %s: wire codes are defined once, in %s; name it from there (= wirecode.<Code>)",
				c.pos, c.name, c.value, wirecodeDir)
		}
	}
}

// constSpec is one constant given an integer literal.
type constSpec struct {
	name, value, pos string
	node             ast.Node
}

// literalConsts lists the file's constants, at any level, whose value is
// an integer literal (or its negation).
func literalConsts(f *ast.File) []constSpec {
	var out []constSpec
	ast.Inspect(f, func(n ast.Node) bool {
		gd, ok := n.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			return true
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue // iota continuation: no literal of its own
				}
				if lit := intLiteral(vs.Values[i]); lit != "" {
					out = append(out, constSpec{name: name.Name, value: lit, node: name})
				}
			}
		}
		return false
	})
	return out
}

// intLiteral returns e's text when it is an integer literal, possibly
// negated or converted (int32(19)); "" otherwise.
func intLiteral(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.INT {
			return e.Value
		}
	case *ast.UnaryExpr:
		if e.Op == token.SUB {
			if v := intLiteral(e.X); v != "" {
				return "-" + v
			}
		}
	case *ast.ParenExpr:
		return intLiteral(e.X)
	case *ast.CallExpr:
		if len(e.Args) == 1 {
			return intLiteral(e.Args[0])
		}
	}
	return ""
}
