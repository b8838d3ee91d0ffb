package lint

import (
	"go/ast"
	"go/token"
	"sort"
	"strings"
	"testing"
)

// goOwner is a production file allowed to hold go statements: how many,
// and why each goroutine has an owner that stops it and recovers its
// panics (or why a panic there may end the process).
type goOwner struct {
	n   int
	why string
}

// goOwners lists every production file with a go statement. New code
// starts goroutines through an owner: recovery.Go or recovery.Supervise
// (actors/recovery), a stage (actors/stage), or one of these files. The
// test fails for a go statement in a file not listed, and for a listed
// count that no longer matches (add the new one with its reason, or
// lower the count).
var goOwners = map[string]goOwner{
	// The owners' primitives.
	"actors/recovery/recovery.go":        {1, "recovery.Go itself: the goroutine recovers and reports to its owner"},
	"actors/stage/dispatcher.go":         {1, "the stages' dispatcher: runs actor mailboxes, whose panics protoactor recovers and hands to the supervisor"},
	"netloop/remoting/client_recover.go": {1, "remoting.Client.goOwned: reader, writer and request goroutines, waited for by Close; a panic closes the client with it as the cause"},
	// Broker stages' helper goroutines: each recovers and tells its stage.
	"actors/dispatch/checkpointer.go": {1, "the dispatch stage's checkpointer: recovers, logs and tells the stage (checkpointerPanicked), which restarts"},
	"actors/writer/flusher.go":        {1, "the writer's flusher: recovers, logs and restarts the writer (onPanic)"},
	"actors/registrar/calls.go":       {2, "the registrar stage's calls (a panic fails the call, retried) and connection watchers (a select), waited for by the stage"},
	"actors/registrar/registrar.go":   {1, "the unregistration fan-out at stop: each call recovers; the stage waits for all"},
	// Replication: every goroutine is the Service's or its actors'.
	"actors/replication/service.go": {2, "housekeeping (a panic ends the round only) and Stop's wait (wg.Wait, close)"},
	"actors/replication/stages.go":  {3, "the sender's listener and replica connections and the receiver's stream: a panic is their error, reported to their actor"},
	"actors/replication/master.go":  {1, "a replica connection's ack reader: a panic is the connection's error; the connection waits for it"},
	// The controller.
	"actors/controller/controller.go":    {2, "the apply waiter (a panic is the request's error, sent to the stage) and Stop's wait (wg.Wait, close)"},
	"actors/controller/member/member.go": {1, "Stop's wait (wg.Wait, close); the heartbeats and fence watch are supervised (supervise.go)"},
	// The remoting port.
	"netloop/server.go":     {1, "the gnet engine: a panic is the server's run error, seen by Start and Stop"},
	"netloop/tlssession.go": {1, "a TLS connection's goroutine: a panic closes that connection; requests are recovered by the router"},
	// Clients and the process's HTTP endpoint.
	"cmd/internal/client/producer/producer.go": {1, "the native producer's callback workers: a panic is that completion's alone; Close waits for them"},
	"cmd/internal/process/http.go":             {2, "the metrics/console HTTP server and its sniffer: both recover and log; Stop closes them"},
	"cmd/internal/process/httpsniff.go":        {1, "one goroutine per accepted connection's first byte: recovers, closes the connection; the sniffer waits"},
	"cmd/internal/tlsconf/reload.go":           {1, "the certificate poller: a panic ends the round only; Stop waits"},
	// Tools and test harnesses (not the broker process): a panic ends the
	// command or the test, which is what their user wants to see.
	"netloop/remoting/remotingtest/remotingtest.go": {2, "a scripted remoting peer for tests"},
	"cmd/internal/chaos/cluster/proc.go":            {1, "the chaos harness: waits for a child process"},
	"cmd/internal/chaos/proxy/proxy.go":             {3, "the chaos harness's TCP proxy"},
	"cmd/natsbench/servers.go":                      {1, "benchmark tool"},
	"cmd/wheelctl/benchgroup.go":                    {1, "wheelctl bench: workers of one command, waited for"},
	"cmd/wheelctl/benchpop.go":                      {3, "wheelctl bench: workers of one command, waited for"},
	"cmd/wheelctl/benchproduce.go":                  {1, "wheelctl bench: workers of one command, waited for"},
	"cmd/wheelctl/benchredeliver.go":                {1, "wheelctl bench: workers of one command, waited for"},
	"cmd/wheelctl/benchrepl.go":                     {1, "wheelctl bench: workers of one command, waited for"},
	"cmd/wheelctl/benchreport.go":                   {1, "wheelctl bench: workers of one command, waited for"},
	"cmd/wheelctl/benchsend.go":                     {4, "wheelctl bench: workers of one command, waited for"},
	"cmd/wheelctl/benchtarget.go":                   {1, "wheelctl bench: workers of one command, waited for"},
}

// TestGoStatementsHaveOwners lists every go statement of production code
// and checks it against goOwners.
func TestGoStatementsHaveOwners(t *testing.T) {
	found := map[string][]string{}
	walkGo(t, func(path string, f *ast.File, fset *token.FileSet) {
		rel := relPath(t, path)
		if strings.HasSuffix(rel, "_test.go") {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				found[rel] = append(found[rel], fset.Position(g.Pos()).String())
			}
			return true
		})
	})
	if len(found) < 5 {
		t.Fatalf("found go statements in only %d files: is the root %s right?", len(found), root)
	}
	files := make([]string, 0, len(found))
	for rel := range found {
		files = append(files, rel)
	}
	sort.Strings(files)
	for _, rel := range files {
		at := found[rel]
		o, ok := goOwners[rel]
		switch {
		case !ok:
			t.Errorf("%s: a go statement outside a registered owner: start it with recovery.Go or recovery.Supervise "+
				"(actors/recovery) from its owner, or register the file in goOwners with the reason", strings.Join(at, ", "))
		case len(at) != o.n:
			t.Errorf("%s has %d go statements, goOwners says %d (%s): register the new one with its reason, or lower the count",
				rel, len(at), o.n, strings.Join(at, ", "))
		}
	}
	for rel := range goOwners {
		if _, ok := found[rel]; !ok {
			t.Errorf("%s has no go statement any more: take it off goOwners", rel)
		}
	}
}
