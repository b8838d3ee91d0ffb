// Package securitytest_test runs a production deployment as docs/operations.md's
// production checklist sets it up (three name servers with raft controllers,
// a replicated group of three brokers, TLS enforcing with a CA, an ACL file,
// the controllers' and the group's secrets) as real processes on loopback,
// and attacks it from processes and connections that are not its peers while
// official Go clients send. It is a package of its own because the Go
// client's WithTls(true) is process-global (security.md 3.1): every client
// of this test binary speaks TLS.
package securitytest_test

import (
	"os"
	"testing"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestMain removes the wheelmq binary the test built (processtest.Binary).
func TestMain(m *testing.M) {
	code := m.Run()
	processtest.RemoveBinary()
	os.Exit(code)
}
