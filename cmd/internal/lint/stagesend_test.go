package lint

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestStageSendsCounted fails on a message sent to an actor around its
// stage (actors/stage): a send through the actor system's root or the
// receive context (Root.Send, ctx.Send, ctx.Request, ...) reaches the
// actor without raising its stage's pending count, and the stage's
// mailbox depth (wheelmq_actor_mailbox_depth) then goes negative when the
// message is processed. The POP stage's journal and offset answers went
// that way and showed a depth of -21 on an idle broker. Only package stage
// itself and tests may send so.
func TestStageSendsCounted(t *testing.T) {
	sends := map[string]bool{"Send": true, "Request": true, "RequestWithCustomSender": true, "RequestFuture": true, "Forward": true}
	walkGo(t, func(path string, f *ast.File, fset *token.FileSet) {
		slash := filepath.ToSlash(path)
		if strings.HasSuffix(path, "_test.go") || strings.Contains(slash, "/actors/stage/") {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !sends[sel.Sel.Name] || len(call.Args) < 2 {
				return true
			}
			// x.Root.Send(pid, msg), root.Send(pid, msg), ctx.Send(pid, msg):
			// a send with a PID first; Stage.Send and Inbox.Push take the
			// message alone.
			if uncountedReceiver(sel.X) {
				t.Errorf("%s: %s sends to an actor around its stage: use the *stage.Stage's Send (or an Inbox) so the mailbox depth counts it",
					fset.Position(call.Pos()), render(sel))
			}
			return true
		})
	})
}

// uncountedReceiver reports whether x names the actor system's root or a
// receive context.
func uncountedReceiver(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == "Root"
	case *ast.Ident:
		return x.Name == "root" || x.Name == "ctx" || x.Name == "rootCtx"
	case *ast.CallExpr:
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
			return sel.Sel.Name == "Root" || sel.Sel.Name == "WithGuardian"
		}
	}
	return false
}

func render(sel *ast.SelectorExpr) string {
	switch x := sel.X.(type) {
	case *ast.Ident:
		return x.Name + "." + sel.Sel.Name
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			return id.Name + "." + x.Sel.Name + "." + sel.Sel.Name
		}
	}
	return sel.Sel.Name
}
