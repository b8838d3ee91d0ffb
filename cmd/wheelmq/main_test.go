package main

import (
	"os"
	"testing"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestMain runs the tests, 4 parallel ones at a time (they start and kill
// processes and wait for clients' route polls far more than they compute),
// and removes the wheelmq binary that the process tests share
// (processtest.Binary) once they have run.
func TestMain(m *testing.M) {
	processtest.MinParallel(4)
	code := m.Run()
	processtest.RemoveBinary()
	os.Exit(code)
}
