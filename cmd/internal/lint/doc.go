// Package lint holds the house rules that can be checked by reading the
// source, as ordinary tests (pebble's internal/lint is the model): run
// with the rest of `go test ./...`, a rule broken anywhere in the tree
// fails the suite with the file and line.
//
// The rules:
//   - No port picking (TestNoPortPicking): nothing listens on port 0 only to
//     close the listener and hand the number on, a race with every other
//     bind on the machine; a process gets a port its starter holds
//     (netloop/portres) or binds port 0 itself and reports it.
//   - Stage sends counted (TestStageSendsCounted): nothing sends to an
//     actor through the actor system's root or a receive context
//     (Root.Send, ctx.Send, ctx.Request, ...) outside actors/stage; a
//     message sent around its stage is processed without having been
//     counted, and the stage's mailbox depth goes negative.
package lint
