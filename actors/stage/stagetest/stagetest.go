// Package stagetest has helpers for tests of the stages: counting the
// goroutines a stage owns beside its actor (a flusher, a checkpointer), to
// check that exactly one runs while the stage does and none after it
// stopped.
package stagetest

import (
	"bytes"
	"runtime"
)

// GoroutinesIn counts the goroutines whose stack holds fn (a function's
// full name as runtime stacks print it, e.g.
// "actors/writer.(*flusher).run").
func GoroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte(fn)) {
			count++
		}
	}
	return count
}
