package process_test

import (
	"os"
	"testing"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestMain runs the package's tests, 4 parallel ones at a time (each has
// its own broker and mostly waits: for a client's rebalance, a timer
// coming due, a failover), then stops the shared Chromium of the browser
// tests (console_browser_shared_test.go), if one was started. The v5 SDK,
// whose switches are process-wide, logs errors only, into a temporary
// directory, and dials in plaintext.
func TestMain(m *testing.M) {
	processtest.MinParallel(4)
	logs, err := os.MkdirTemp("", "process-sdklogs")
	if err == nil {
		_ = os.Setenv("rocketmq.client.logRoot", logs)
	}
	_ = os.Setenv("rocketmq.client.logLevel", "error")
	rmq.ResetLogger()
	rmq.EnableSsl = false
	code := m.Run()
	shared.stop()
	if logs != "" {
		_ = os.RemoveAll(logs)
	}
	os.Exit(code)
}
