package process_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// TestConsoleOverTLSEnforcingWithACL runs the console of a broker whose
// ports take TLS only and whose ACL file decides every request: the
// console's own admin requests (here a topic created by an admin) go over
// TLS, signed as the logged-in account, and take effect; a plaintext
// client of the same port is refused.
func TestConsoleOverTLSEnforcingWithACL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(consoleACL), 0o600); err != nil {
		t.Fatal(err)
	}
	admin := auth.Credentials{AccessKey: "admin-ops", SecretKey: "admin-ops-secret"}
	n := processtest.Start(t, processtest.Options{Admin: admin, Metrics: true, ClientTLS: insecure(), MutateNode: func(c *process.Config) {
		c.ACL = process.ACLConfig{File: path, Interval: 100 * time.Millisecond}
		c.TLS = process.TLSConfig{Mode: netloop.TLSEnforcing, Namesrv: true}
		c.Console = true
	}})
	// A plaintext dial connects (TCP), but its first request is never answered.
	if c, err := dialTLS(t, n.BrokerAddr(), nil); err == nil {
		if _, err := c.InvokeWithin(t.Context(), topicConfigReq(), 3*time.Second); err == nil {
			t.Fatal("a plaintext client was answered by an enforcing port")
		}
	}
	ops := newWebClient(t, "http://"+n.MetricsAddr())
	if code := ops.post("/login", url.Values{"accessKey": {"admin-ops"}, "secret": {"admin-ops-secret"}}); code != http.StatusSeeOther {
		t.Fatalf("admin login: %d", code)
	}
	code, body := ops.get("/topics")
	if code != http.StatusOK || strings.Contains(body, `id="error"`) {
		t.Fatalf("admin's topics page over a TLS-only broker: %d %s", code, body)
	}
	tok := csrfField.FindStringSubmatch(body)
	if tok == nil {
		t.Fatal("no CSRF token")
	}
	if code := ops.post("/topics/create", url.Values{"name": {"by-console-tls"}, "queues": {"2"}, "csrf": {tok[1]}}); code != http.StatusSeeOther {
		t.Fatalf("admin create over TLS: %d", code)
	}
	resp := processtest.InvokeSignedTLS(t, n.BrokerAddr(), insecure(), topicConfigReq(), admin)
	if !strings.Contains(string(resp.Body), "by-console-tls") {
		t.Fatalf("the console's create did not reach the TLS-only broker: %d %s", resp.Code, resp.Body)
	}
}
