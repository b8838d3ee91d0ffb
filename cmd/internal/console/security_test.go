package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveOn starts the console with o (its Backend f) on an httptest server
// whose address is o.Listen.
func serveOn(t *testing.T, f *fake, o Options) (*httptest.Server, *Console) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	o.Backend, o.Listen = f, srv.Listener.Addr().String()
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = c
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, c
}

// hostOf is srv's host:port.
func hostOf(srv *httptest.Server) string { return strings.TrimPrefix(srv.URL, "http://") }

// do sends a request to c directly, from remote, with host as Host.
func do(c *Console, method, target, host, remote string, form url.Values, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	r := httptest.NewRequest(method, target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	r.Host, r.RemoteAddr = host, remote
	for _, ck := range cookies {
		r.AddCookie(ck)
	}
	w := httptest.NewRecorder()
	c.ServeHTTP(w, r)
	return w
}

// DNS rebinding: a page whose name now points at the console sends its
// own name as Host. Only the console's address, localhost and the listed
// names are served; a change through another name does not happen.
func TestHostAllowList(t *testing.T) {
	f := newFake(false, 3)
	srv, c := serveOn(t, f, Options{Hosts: []string{"console.example.org", "ops.example.org:8443"}})
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	for host, want := range map[string]int{
		"127.0.0.1:" + port: 200, "localhost:" + port: 200, "LOCALHOST:" + port: 200, "[::1]:" + port: 200, "10.1.2.3:" + port: 200,
		"console.example.org": 200, "console.example.org:" + port: 200, "ops.example.org:8443": 200,
		"evil.example:" + port: 421, "evil.example": 421, "127.0.0.1:1": 421, "localhost": 421, "ops.example.org": 421,
		"": 421, "localhost.evil.example:" + port: 421,
	} {
		if w := do(c, "GET", "/topics", host, "127.0.0.1:5000", nil); w.Code != want {
			t.Errorf("Host %q: %d, want %d", host, w.Code, want)
		}
	}
	// The rebinding attack: no ACL, a session and its CSRF token taken
	// through the attacker's name, then a create.
	w := do(c, "GET", "/topics", "rebind.evil.example:"+port, "127.0.0.1:5000", nil)
	if w.Code != http.StatusMisdirectedRequest || strings.Contains(w.Body.String(), `name="csrf"`) {
		t.Fatalf("a page under a foreign name: %d", w.Code)
	}
	w = do(c, "POST", "/topics/create", "rebind.evil.example:"+port, "127.0.0.1:5000", url.Values{"name": {"owned"}, "queues": {"1"}})
	if w.Code != http.StatusMisdirectedRequest || len(f.changed()) != 0 {
		t.Fatalf("a change under a foreign name: %d %v", w.Code, f.changed())
	}
}

// After a login, next is followed only to a path of this origin.
func TestLoginRedirectSameOrigin(t *testing.T) {
	srv, c := serveOn(t, newFake(true, 1), Options{})
	h := hostOf(srv)
	for next, want := range map[string]string{
		"/topics": "/topics", "/topic?name=a%2Fb": "/topic?name=a%2Fb", "": "/",
		"//evil.example": "/", `/\evil.example`: "/", `/\/evil.example`: "/", "http://evil.example/": "/",
		"https:evil.example": "/", "javascript:alert(1)": "/", "evil.example": "/", "/\t/evil.example": "/",
		"/x\\y": "/", "/ok/../path": "/path",
	} {
		c.limit = limiter{} // the rate limit is another test's
		target := "/login?next=" + url.QueryEscape(next)
		w := do(c, "POST", target, h, "127.0.0.1:5000", url.Values{"accessKey": {"admin"}, "secret": {"admin-secret"}})
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != want {
			t.Errorf("next %q: %d to %q, want %q", next, w.Code, w.Header().Get("Location"), want)
		}
	}
}

// Login attempts are limited per client address and per account: after
// a few failures a key is locked (429, Retry-After), for longer after
// each further failure; another address still cannot guess the locked
// account; and one address cannot try faster than the rate allows.
func TestLoginLimits(t *testing.T) {
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	srv, c := serveOn(t, newFake(true, 1), Options{Now: func() time.Time { return now }})
	h := hostOf(srv)
	login := func(remote, ak, secret string) *httptest.ResponseRecorder {
		return do(c, "POST", "/login", h, remote, url.Values{"accessKey": {ak}, "secret": {secret}})
	}
	for i := range loginFreeFailures {
		if w := login("192.0.2.1:1000", "admin", "guess"+strconv.Itoa(i)); w.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i, w.Code)
		}
	}
	if w := login("192.0.2.1:1000", "admin", "guess-last"); w.Code != http.StatusUnauthorized {
		t.Fatalf("the failure that locks: %d", w.Code)
	}
	w := login("192.0.2.1:1000", "admin", "admin-secret")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("locked address: %d Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	// The account is locked from anywhere; the address for any account.
	if w := login("198.51.100.7:1000", "admin", "admin-secret"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("locked account from another address: %d", w.Code)
	}
	if w := login("192.0.2.1:1000", "reader", "reader-secret"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("locked address for another account: %d", w.Code)
	}
	// Back-off: the next failure after the lock locks for twice as long.
	now = now.Add(time.Second)
	if w := login("192.0.2.1:1000", "admin", "guess-again"); w.Code != http.StatusUnauthorized {
		t.Fatalf("after the lock: %d", w.Code)
	}
	if w := login("192.0.2.1:1000", "admin", "x"); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "2" {
		t.Fatalf("back-off: %d Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	// The rate: good logins from one address, as fast as it can.
	ok := 0
	for range 41 {
		if w := login("203.0.113.5:1000", "reader", "reader-secret"); w.Code == http.StatusSeeOther {
			ok++
		} else if w.Code != http.StatusTooManyRequests {
			t.Fatalf("rate: %d", w.Code)
		}
	}
	if ok != int(loginBurst) {
		t.Fatalf("%d of 41 logins in one instant, want %v", ok, loginBurst)
	}
	now = now.Add(time.Second)
	if w := login("203.0.113.5:1000", "reader", "reader-secret"); w.Code != http.StatusSeeOther {
		t.Fatalf("a second later: %d", w.Code)
	}
}

// One account's logins drop only its own oldest sessions; a full console
// refuses a new account's login instead of dropping another's session.
func TestSessionsPerAccount(t *testing.T) {
	srv, c := serveOn(t, newFake(true, 1), Options{})
	h := hostOf(srv)
	login := func(ak string) *http.Cookie {
		w := do(c, "POST", "/login", h, "127.0.0.1:5000", url.Values{"accessKey": {ak}, "secret": {ak + "-secret"}})
		for _, ck := range w.Result().Cookies() {
			if ck.Name == cookieName {
				return ck
			}
		}
		t.Fatalf("%s: no session cookie (%d)", ak, w.Code)
		return nil
	}
	admin := login("admin")
	first := login("reader")
	for range maxSessions + 10 {
		c.limit = limiter{} // the rate limit is another test's
		login("reader")
	}
	if w := do(c, "GET", "/topics", h, "127.0.0.1:5000", nil, admin); w.Code != http.StatusOK {
		t.Fatalf("the admin's session was pushed out: %d", w.Code)
	}
	if w := do(c, "GET", "/topics", h, "127.0.0.1:5000", nil, first); w.Code != http.StatusSeeOther {
		t.Fatalf("the reader's first session outlived its cap: %d", w.Code)
	}
	s := newSessions(time.Hour, time.Now)
	for i := range maxSessions {
		if _, ok := s.create(Credentials{}, Identity{Name: "acct" + strconv.Itoa(i)}); !ok {
			t.Fatalf("session %d refused", i)
		}
	}
	if _, ok := s.create(Credentials{}, Identity{Name: "newcomer"}); ok {
		t.Fatal("a full console dropped another account's session")
	}
	if _, ok := s.create(Credentials{}, Identity{Name: "acct7"}); !ok {
		t.Fatal("a full console refused an account its own oldest session")
	}
}

// Served over TLS (Options.Secure), the session cookie is Secure.
func TestSecureCookie(t *testing.T) {
	srv, c := serveOn(t, newFake(true, 1), Options{Secure: true})
	h := hostOf(srv)
	w := do(c, "POST", "/login", h, "127.0.0.1:5000", url.Values{"accessKey": {"admin"}, "secret": {"admin-secret"}})
	cks := w.Result().Cookies()
	if len(cks) != 1 || !cks[0].Secure || !cks[0].HttpOnly || cks[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", cks)
	}
}

// With HTTPSLogin (the port also speaks HTTPS), the login page asked for
// over plain HTTP is sent to https://, and a login posted in clear is
// refused before its secret is looked at.
func TestLoginOnlyOverHTTPS(t *testing.T) {
	f := newFake(true, 1)
	srv, c := serveOn(t, f, Options{HTTPSLogin: true})
	h := hostOf(srv)
	w := do(c, "GET", "/login?next=%2Ftopics", h, "127.0.0.1:5000", nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "https://"+h+"/login?next=%2Ftopics" {
		t.Fatalf("plain login page: %d to %q", w.Code, w.Header().Get("Location"))
	}
	w = do(c, "POST", "/login", h, "127.0.0.1:5000", url.Values{"accessKey": {"admin"}, "secret": {"admin-secret"}})
	if w.Code != http.StatusForbidden || len(w.Result().Cookies()) != 0 {
		t.Fatalf("plain login post: %d", w.Code)
	}
}
