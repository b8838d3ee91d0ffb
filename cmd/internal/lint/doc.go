// Package lint holds the house rules that can be checked by reading the
// source, as ordinary tests (pebble's internal/lint is the model): run
// with the rest of `go test ./...`, a rule broken anywhere in the tree
// fails the suite with the file and line. The tree is parsed once and
// shared by the rules.
//
// The rules:
//   - No port picking (TestNoPortPicking): nothing listens on port 0 only to
//     close the listener and hand the number on, a race with every other
//     bind on the machine; a process gets a port its starter holds
//     (netloop/portres) or binds port 0 itself and reports it.
//   - actors/ never imports netloop/ (TestActorsDoNotImportNetloop): the
//     stages sit below the event loop and the codecs, with no exception
//     (the name server and the controller included: their codecs are
//     netloop/nsrvcodec and netloop/ctlwire).
//   - Wire codes are defined once (TestWireCodesDefinedOnce): RocketMQ's
//     request and response codes get their numbers in actors/wirecode
//     only; any other package names them from there.
//   - No go statement outside a registered owner
//     (TestGoStatementsHaveOwners): every production file with a go
//     statement is listed with its count and why its goroutines have an
//     owner that stops them and recovers their panics; new goroutines
//     start through actors/recovery (Go, Supervise) or a stage.
//   - Stage sends counted (TestStageSendsCounted): nothing sends to an
//     actor through the actor system's root or a receive context
//     (Root.Send, ctx.Send, ctx.Request, ...) outside actors/stage; a
//     message sent around its stage is processed without having been
//     counted, and the stage's mailbox depth goes negative.
//   - The console reads through the broker API (TestConsoleReadsThroughTheAPI):
//     its files (cmd/internal/console, cmd/internal/process/console*.go) do
//     not import cmd/internal/admin, the admin client that sends requests
//     to the broker's own port over loopback. A ratchet, as above.
package lint
