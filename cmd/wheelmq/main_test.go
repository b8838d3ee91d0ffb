package main

import (
	"os"
	"testing"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestMain removes the wheelmq binary that the process tests share
// (processtest.Binary) once they have run.
func TestMain(m *testing.M) {
	code := m.Run()
	processtest.RemoveBinary()
	os.Exit(code)
}
