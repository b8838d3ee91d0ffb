package process_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// lockedBuf is a log sink safe for the node's goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const consoleACL = `accounts:
  - accessKey: admin-ops
    secretKey: admin-ops-secret
    admin: true
  - accessKey: viewer-app
    secretKey: viewer-secret
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
  - accessKey: pusher-app
    secretKey: pusher-secret
    defaultTopicPerm: PUB
`

type webClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newWebClient(t *testing.T, base string) *webClient {
	jar, _ := cookiejar.New(nil)
	return &webClient{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: webHTTP.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// webHTTP is the tests' HTTP client: it takes the process's self-signed
// certificate (the HTTP port speaks HTTPS whenever TLS is configured).
var webHTTP = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed test certificate
}}

func (w *webClient) get(path string) (int, string) {
	w.t.Helper()
	resp, err := w.c.Get(w.base + path)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (w *webClient) post(path string, form url.Values) int {
	w.t.Helper()
	resp, err := w.c.PostForm(w.base+path, form)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]{32})"`)

// TestConsoleACL runs the console of a broker with an ACL file: every page
// needs a login, a wrong secret is refused, an account without SUB may
// not look, a SUB account looks but may not change, an admin changes and
// the change is logged with its name; the broker's ACL decides the admin
// requests the console sends for each account.
func TestConsoleACL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(consoleACL), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuf{}
	admin := auth.Credentials{AccessKey: "admin-ops", SecretKey: "admin-ops-secret"}
	n := processtest.Start(t, processtest.Options{Admin: admin, Metrics: true, MutateNode: func(c *process.Config) {
		c.ACL = process.ACLConfig{File: path, Interval: 100 * time.Millisecond}
		c.Console = true
		c.Logger = zerolog.New(logs)
	}})
	base := "http://" + n.MetricsAddr()

	anon := newWebClient(t, base)
	if code, _ := anon.get("/topics"); code != http.StatusSeeOther {
		t.Fatalf("anonymous /topics: %d", code)
	}
	if code := anon.post("/login", url.Values{"accessKey": {"admin-ops"}, "secret": {"wrong"}}); code != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d", code)
	}
	if code := anon.post("/login", url.Values{"accessKey": {"nobody"}, "secret": {"x"}}); code != http.StatusUnauthorized {
		t.Fatalf("unknown key: %d", code)
	}
	if code, _ := anon.get("/"); code != http.StatusSeeOther {
		t.Fatalf("a refused login let the browser in: %d", code)
	}

	pusher := newWebClient(t, base)
	pusher.post("/login", url.Values{"accessKey": {"pusher-app"}, "secret": {"pusher-secret"}})
	if code, _ := pusher.get("/timers"); code != http.StatusForbidden {
		t.Fatalf("an account without SUB read the timers: %d", code)
	}

	viewer := newWebClient(t, base)
	if code := viewer.post("/login", url.Values{"accessKey": {"viewer-app"}, "secret": {"viewer-secret"}}); code != http.StatusSeeOther {
		t.Fatalf("viewer login: %d", code)
	}
	code, body := viewer.get("/timers")
	if code != 200 || strings.Contains(body, `id="cancel-timer"`) {
		t.Fatalf("viewer's timers: %d, cancel form shown %v", code, strings.Contains(body, `id="cancel-timer"`))
	}
	tok := csrfField.FindStringSubmatch(body)
	if tok == nil {
		t.Fatal("no CSRF token")
	}
	if code, body := viewer.get("/topics"); code != 200 || strings.Contains(body, `id="error"`) || !strings.Contains(body, "TBW102") {
		t.Fatalf("viewer's topics (SUB by default): %d %s", code, body)
	}
	if code := viewer.post("/topics/create", url.Values{"name": {"by-viewer"}, "csrf": {tok[1]}}); code != http.StatusForbidden {
		t.Fatalf("viewer create: %d", code)
	}

	ops := newWebClient(t, base)
	ops.post("/login", url.Values{"accessKey": {"admin-ops"}, "secret": {"admin-ops-secret"}})
	code, body = ops.get("/topics")
	if code != 200 || strings.Contains(body, `id="error"`) {
		t.Fatalf("admin's topics: %d %s", code, body)
	}
	tok = csrfField.FindStringSubmatch(body)
	if code := ops.post("/topics/create", url.Values{"name": {"by-admin"}, "queues": {"2"}, "csrf": {tok[1]}}); code != http.StatusSeeOther {
		t.Fatalf("admin create: %d", code)
	}
	resp := processtest.InvokeSigned(t, n.BrokerAddr(), topicConfigReq(), admin)
	if !strings.Contains(string(resp.Body), "by-admin") || strings.Contains(string(resp.Body), "by-viewer") {
		t.Fatalf("topics after the console's changes: %s", resp.Body)
	}
	if l := logs.String(); !regexp.MustCompile(`"who":"admin-ops"[^\n]*"action":"/topics/create"[^\n]*"message":"console change"`).MatchString(l) {
		t.Fatalf("no change log with who: %s", l)
	}
}
