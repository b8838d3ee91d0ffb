package process_test

import (
	"errors"
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
	// The console is HTTPS: the login form's secret never goes in clear,
	// the session cookie is Secure, and plain HTTP gets no page.
	if resp, err := webHTTP.Get("http://" + n.MetricsAddr() + "/login"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the console answered plain HTTP under TLS")
		}
	}
	ops := newWebClient(t, "https://"+n.MetricsAddr())
	if code := ops.post("/login", url.Values{"accessKey": {"admin-ops"}, "secret": {"admin-ops-secret"}}); code != http.StatusSeeOther {
		t.Fatalf("admin login: %d", code)
	}
	u, _ := url.Parse("https://" + n.MetricsAddr() + "/")
	if cks := ops.c.Jar.Cookies(u); len(cks) != 1 {
		t.Fatalf("session cookies %v", cks)
	}
	noFollow := &http.Client{Transport: webHTTP.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := noFollow.PostForm("https://"+n.MetricsAddr()+"/login", url.Values{"accessKey": {"admin-ops"}, "secret": {"admin-ops-secret"}}); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if cks := resp.Cookies(); len(cks) != 1 || !cks[0].Secure {
			t.Fatalf("cookie over TLS not Secure: %+v", cks)
		}
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

// A console on a non-loopback address that would let anyone in as admin
// (no ACL, no client certificates; TLS alone encrypts but authenticates
// no one) is refused at start, unless explicitly accepted.
func TestConsoleExposedRefusedAtStart(t *testing.T) {
	for name, cfg := range map[string]process.Config{
		"plain":               {RunBroker: true, Console: true, MetricsListen: "0.0.0.0:0"},
		"TLS without clients": {RunBroker: true, Console: true, MetricsListen: "0.0.0.0:0", TLS: process.TLSConfig{Mode: netloop.TLSEnforcing}},
	} {
		if _, err := process.Start(cfg); !errors.Is(err, process.ErrConsoleExposed) {
			t.Fatalf("%s: start: %v", name, err)
		}
	}
	for name, c := range map[string]process.Config{
		"insecure accepted": {RunBroker: true, Console: true, MetricsListen: "0.0.0.0:0", ConsoleInsecure: true},
		"mutual TLS":        {RunBroker: true, Console: true, MetricsListen: "0.0.0.0:0", TLS: process.TLSConfig{Mode: netloop.TLSEnforcing, ClientCAFile: "ca.pem"}},
		"ACL":               {RunBroker: true, Console: true, MetricsListen: "[::]:0", ACL: process.ACLConfig{File: "x"}},
		"loopback":          {RunBroker: true, Console: true, MetricsListen: "127.0.0.1:0"},
		"no console":        {RunBroker: true, MetricsListen: "0.0.0.0:0"},
	} {
		if err := process.ConsoleExposure(c); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Under --tls-mode permissive the HTTP port speaks both: /metrics over
// plain HTTP and HTTPS; the console's login only over HTTPS (the plain
// login page is sent to https://, a plain login post refused).
func TestHTTPPortPermissive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(consoleACL), 0o600); err != nil {
		t.Fatal(err)
	}
	admin := auth.Credentials{AccessKey: "admin-ops", SecretKey: "admin-ops-secret"}
	n := processtest.Start(t, processtest.Options{Admin: admin, Metrics: true, MutateNode: func(c *process.Config) {
		c.ACL = process.ACLConfig{File: path, Interval: 100 * time.Millisecond}
		c.TLS = process.TLSConfig{Mode: netloop.TLSPermissive}
		c.Console = true
	}})
	for _, scheme := range []string{"http", "https"} {
		resp, err := webHTTP.Get(scheme + "://" + n.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || (scheme == "https") != (resp.TLS != nil) {
			t.Fatalf("%s /metrics: %d, TLS %v", scheme, resp.StatusCode, resp.TLS != nil)
		}
	}
	plain := newWebClient(t, "http://"+n.MetricsAddr())
	resp, err := plain.c.Get("http://" + n.MetricsAddr() + "/login?next=%2Ftopics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "https://"+n.MetricsAddr()+"/login?next=%2Ftopics" {
		t.Fatalf("plain login page: %d to %q", resp.StatusCode, loc)
	}
	if code := plain.post("/login", url.Values{"accessKey": {"admin-ops"}, "secret": {"admin-ops-secret"}}); code != http.StatusForbidden {
		t.Fatalf("plain login post: %d", code)
	}
	ops := newWebClient(t, "https://"+n.MetricsAddr())
	if code := ops.post("/login", url.Values{"accessKey": {"admin-ops"}, "secret": {"admin-ops-secret"}}); code != http.StatusSeeOther {
		t.Fatalf("HTTPS login: %d", code)
	}
	if code, _ := ops.get("/topics"); code != http.StatusOK {
		t.Fatalf("topics over HTTPS: %d", code)
	}
}

// The process's console serves its own address and the listed names,
// and refuses another Host (DNS rebinding).
func TestConsoleHostsOfTheProcess(t *testing.T) {
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) {
		c.Console = true
		c.ConsoleHosts = []string{"mq-console.example.org"}
	}})
	_, port, _ := strings.Cut(n.MetricsAddr(), ":")
	for host, want := range map[string]int{"": 200, "localhost:" + port: 200, "mq-console.example.org": 200, "rebound.evil.example:" + port: 421} {
		req, _ := http.NewRequest("GET", "http://"+n.MetricsAddr()+"/topics", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := webHTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
