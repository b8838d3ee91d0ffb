// Package chaos_test holds the chaos tests: real wheelmq processes (the
// cluster package starts them behind the proxy package's TCP proxies), a
// workload of the official Go client, faults (nemeses) and a history
// checked at the end (the history package). They live in a package of
// their own so that `go test ./...` starts them early, beside the other
// long packages.
package chaos_test

import (
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestMain removes the wheelmq binary the tests share
// (processtest.Binary) once they have run.
func TestMain(m *testing.M) {
	code := m.Run()
	processtest.RemoveBinary()
	os.Exit(code)
}

// buildBinary returns cmd/wheelmq, built once for the package.
func buildBinary(t *testing.T) string {
	t.Helper()
	return processtest.Binary(t)
}

// testHTTP is the HTTP client of this package's tests: every request has a
// deadline.
var testHTTP = &http.Client{Timeout: 5 * time.Second}
