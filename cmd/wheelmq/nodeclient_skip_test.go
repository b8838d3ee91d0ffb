package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wheelmq/wheelmq/netloop/portres"
)

// TestNodeDepsSkipWithoutRegistry: with node and npm on PATH but the npm
// registry unreachable, the Node.js client tests skip (naming the cause)
// instead of failing; npm's output is classified by its error code.
func TestNodeDepsSkipWithoutRegistry(t *testing.T) {
	t.Parallel()
	if got := npmNetworkError([]byte("npm error code ENOTFOUND\nnpm error syscall getaddrinfo\n")); got != "ENOTFOUND" {
		t.Errorf("ENOTFOUND read as %q", got)
	}
	if got := npmNetworkError([]byte("npm error code EUSAGE\nnpm error The `npm ci` command can only install with an existing package-lock.json\n")); got != "" {
		t.Errorf("a usage error read as a network error %q", got)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not on PATH")
	}
	// A registry address that refuses connections: a port this test holds
	// without listening (portres.Hold).
	registry := "http://" + portres.Hold(t) + "/"
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(nodeClientDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"npm_config_registry=" + registry, "npm_config_cache=" + t.TempDir(), // nothing cached: npm must ask the registry
		"npm_config_fetch_retries=0"}
	var skipped, failed bool
	t.Run("install", func(st *testing.T) {
		defer func() { skipped, failed = st.Skipped(), st.Failed() }()
		installNodeDepsEnv(st, dir, env)
	})
	if !skipped || failed {
		t.Fatalf("npm ci against an unreachable registry: skipped %v, failed %v; want a skip", skipped, failed)
	}
}
