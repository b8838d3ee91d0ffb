package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fake is a Backend in memory that records every change.
type fake struct {
	acl     bool
	mu      sync.Mutex
	topics  []Topic
	changes []string
	pending int64
}

func newFake(acl bool, topics int) *fake {
	f := &fake{acl: acl, pending: 10_000_000}
	for i := range topics {
		f.topics = append(f.topics, Topic{Name: fmt.Sprintf("topic-%05d", i), ReadQueues: 4, WriteQueues: 4, Perm: 6})
	}
	return f
}

func (f *fake) change(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes = append(f.changes, s)
}

func (f *fake) changed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.changes...)
}

func (f *fake) ACL() bool { return f.acl }
func (f *fake) Authenticate(_ context.Context, c Credentials) (Identity, error) {
	switch {
	case c.AccessKey == "admin" && c.SecretKey == "admin-secret":
		return Identity{Name: "admin", Admin: true, Read: true}, nil
	case c.AccessKey == "reader" && c.SecretKey == "reader-secret":
		return Identity{Name: "reader", Read: true}, nil
	}
	return Identity{}, ErrBadLogin
}
func (f *fake) Overview(context.Context) (Overview, error) {
	return Overview{Version: "test", BrokerName: "broker-a", Role: "standalone", Healthy: true, Started: time.Now().Add(-time.Hour),
		MsgsIn: 1000, MsgsOut: 900, DiskUsed: 0.5, DiskWarn: 0.85, DiskFull: 0.95, TimersPending: float64(f.pending)}, nil
}
func (f *fake) Stages(context.Context) ([]Stage, error) {
	return []Stage{{Name: "commitlog", Depth: 3, Messages: 100, Up: true, P99: 0.001}, {Name: "dispatch", Up: true},
		{Name: "dequeue_message_0", Up: true, Messages: 5}, {Name: "pull", Up: false, Restarts: 2}}, nil
}
func (f *fake) Topics(context.Context, Credentials) ([]Topic, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Topic(nil), f.topics...), nil
}
func (f *fake) TopicQueues(context.Context, Credentials, string) ([]Queue, error) {
	return []Queue{{Broker: "broker-a", ID: 0, Min: 0, Max: 10}}, nil
}
func (f *fake) CreateTopic(_ context.Context, _ Credentials, t Topic) error {
	f.change("create " + t.Name)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topics = append(f.topics, t)
	return nil
}
func (f *fake) DeleteTopic(_ context.Context, _ Credentials, name string) error {
	f.change("delete " + name)
	return nil
}
func (f *fake) Groups(context.Context, Credentials) ([]Group, error) {
	return []Group{{Name: "billing", ConsumeEnable: true}}, nil
}
func (f *fake) GroupDetail(context.Context, Credentials, string) (GroupDetail, error) {
	return GroupDetail{Group: Group{Name: "billing"}, Topics: []string{"orders"},
		Queues: []QueueLag{{Topic: "orders", ID: 0, BrokerOffset: 10, ConsumerOffset: 4, Lag: 6}}}, nil
}
func (f *fake) ResetGroup(_ context.Context, _ Credentials, g, t string, at time.Time) error {
	f.change("reset " + g + " " + t + " " + at.Format(time.RFC3339))
	return nil
}
func (f *fake) FindMessages(_ context.Context, _ Credentials, q MessageQuery) ([]Message, error) {
	return []Message{{Topic: "orders", MsgID: q.ID, OffsetMsgID: "7F00000100002A9F0000000000001A2B", TimerPending: true,
		Properties: map[string]string{"KEYS": "k1"}, Body: []byte(`{"a":1}`), Life: []Event{{What: "stored", At: time.Now()}}}}, nil
}
func (f *fake) Timers(_ context.Context, edges []int64) (Timers, error) {
	c := make([]int64, len(edges)+1)
	per := f.pending / int64(len(c))
	for i := range c {
		c[i] = per
	}
	return Timers{Pending: f.pending, DueNextMinute: per, Counts: c, LatenessP50: 0.001, LatenessP99: 0.004}, nil
}
func (f *fake) CancelTimer(_ context.Context, _ Credentials, _, id string) error {
	f.change("cancel " + id)
	return nil
}
func (f *fake) Cluster(context.Context, Credentials) (Cluster, error) {
	return Cluster{NameServers: []string{"127.0.0.1:9876"}, Brokers: []Broker{{Cluster: "DefaultCluster", Name: "broker-a", Addr: "127.0.0.1:10911", Role: "master"}}}, nil
}

// serve starts the console over f on an httptest server.
func serve(t *testing.T, f *fake) (*httptest.Server, *http.Client) {
	t.Helper()
	c, err := New(Options{Backend: f})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return srv, cl
}

func get(t *testing.T, cl *http.Client, u string) (int, string, http.Header) {
	t.Helper()
	resp, err := cl.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func post(t *testing.T, cl *http.Client, u string, form url.Values) (int, http.Header) {
	t.Helper()
	resp, err := cl.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]{32})"`)

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the page")
	}
	return m[1]
}

var pages = []string{"/", "/stages", "/topics", "/topic?name=topic-00001", "/groups", "/group?name=billing",
	"/messages", "/messages?id=abc&topic=orders", "/timers", "/timers?range=minute", "/timers?range=year", "/cluster"}

// TestEveryPageRenders: every page, in full and its live part, without
// an error on it; the templates parsed at the start of the test (New).
func TestEveryPageRenders(t *testing.T) {
	srv, cl := serve(t, newFake(false, 120))
	for _, p := range pages {
		for _, suffix := range []string{"", "partial=1"} {
			u := srv.URL + p
			if suffix != "" {
				u += map[bool]string{true: "&", false: "?"}[strings.Contains(p, "?")] + suffix
			}
			code, body, h := get(t, cl, u)
			if code != 200 || strings.Contains(body, `id="error"`) {
				t.Fatalf("%s: %d %s", u, code, body)
			}
			if suffix == "" && !strings.Contains(body, "</html>") {
				t.Fatalf("%s: not a whole page", u)
			}
			if h.Get("Content-Security-Policy") == "" || h.Get("X-Frame-Options") != "DENY" {
				t.Fatalf("%s: security headers missing: %v", u, h)
			}
		}
	}
	// A bad query shows its error on the page.
	if code, body, _ := get(t, cl, srv.URL+"/messages?topic=x&queue=0&offset=abc"); code != 200 || !strings.Contains(body, "not a number") {
		t.Fatalf("bad offset: %d", code)
	}
	for _, p := range []string{"/favicon.ico", "/static/console.js", "/static/console.css"} {
		if code, _, _ := get(t, cl, srv.URL+p); code != 200 {
			t.Fatalf("%s: %d", p, code)
		}
	}
	// The pipeline carries the stage numbers; a down stage is marked.
	_, body, _ := get(t, cl, srv.URL+"/stages")
	if !strings.Contains(body, `data-stage="commitlog"`) || !strings.Contains(body, "DOWN") || !strings.Contains(body, "timer dequeue_message") {
		t.Fatalf("stages page lacks the pipeline or the down stage")
	}
	_, body, _ = get(t, cl, srv.URL+"/messages?id=x&topic=orders")
	if !strings.Contains(body, "&#34;a&#34;: 1") || !strings.Contains(body, "Cancel this timer") {
		t.Fatalf("message page lacks the pretty JSON body or the cancel form")
	}
}

// TestPaging: 10,000 topics come 50 a page, searchable.
func TestPaging(t *testing.T) {
	srv, cl := serve(t, newFake(false, 10_000))
	_, body, _ := get(t, cl, srv.URL+"/topics?page=3")
	if !strings.Contains(body, "10000 of 10000 topics") || !strings.Contains(body, "page 3 of 200") ||
		!strings.Contains(body, "topic-00100") || strings.Contains(body, "topic-00150") {
		t.Fatalf("page 3 wrong")
	}
	_, body, _ = get(t, cl, srv.URL+"/topics?q=0999")
	if !strings.Contains(body, "11 of 10000 topics") {
		t.Fatalf("search wrong: %s", regexp.MustCompile(`<p id="count">[^<]*`).FindString(body))
	}
}

// TestChangesNeedCSRF: a POST without the token, with a wrong one or from
// another origin is refused and changes nothing; with it, it is done.
func TestChangesNeedCSRF(t *testing.T) {
	f := newFake(false, 3)
	srv, cl := serve(t, f)
	_, body, _ := get(t, cl, srv.URL+"/topics")
	tok := csrfOf(t, body)
	for _, form := range []url.Values{{"name": {"x1"}}, {"name": {"x1"}, "csrf": {strings.Repeat("0", 32)}}} {
		if code, _ := post(t, cl, srv.URL+"/topics/create", form); code != http.StatusForbidden {
			t.Fatalf("create without a good token: %d", code)
		}
	}
	req, _ := http.NewRequest("POST", srv.URL+"/topics/create", strings.NewReader(url.Values{"name": {"x1"}, "csrf": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	if resp, err := cl.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin create: %v %v", resp, err)
	}
	if ch := f.changed(); len(ch) != 0 {
		t.Fatalf("refused posts changed %v", ch)
	}
	for path, form := range map[string]url.Values{
		"/topics/create": {"name": {"x1"}, "queues": {"2"}}, "/topics/delete": {"name": {"x1"}},
		"/groups/reset":  {"group": {"billing"}, "topic": {"orders"}, "at": {"2026-01-02T03:04"}},
		"/timers/cancel": {"offsetMsgId": {"7F00000100002A9F0000000000001A2B"}},
	} {
		form.Set("csrf", tok)
		if code, _ := post(t, cl, srv.URL+path, form); code != http.StatusSeeOther {
			t.Fatalf("%s with token: %d", path, code)
		}
	}
	want := []string{"create x1", "delete x1", "reset billing orders 2026-01-02T03:04:00Z", "cancel 7F00000100002A9F0000000000001A2B"}
	got := strings.Join(f.changed(), "|")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Fatalf("changes %q lack %q", got, w)
		}
	}
}

// TestGetNeverChanges: every GET of every page, change paths included,
// with form fields in the query, changes nothing.
func TestGetNeverChanges(t *testing.T) {
	f := newFake(false, 3)
	srv, cl := serve(t, f)
	_, body, _ := get(t, cl, srv.URL+"/topics")
	tok := csrfOf(t, body)
	for _, p := range append(pages, "/topics/create?name=x&csrf="+tok, "/topics/delete?name=topic-00001&csrf="+tok,
		"/groups/reset?group=g&topic=t&at=2026-01-02T03:04&csrf="+tok, "/timers/cancel?offsetMsgId=x&csrf="+tok, "/logout") {
		get(t, cl, srv.URL+p)
	}
	if ch := f.changed(); len(ch) != 0 {
		t.Fatalf("GETs changed %v", ch)
	}
}

// TestLogin: with ACL every page needs a login; a wrong secret is
// refused; a reader may look but not change; an admin may change; the
// cookie is HttpOnly and SameSite=Strict.
func TestLogin(t *testing.T) {
	f := newFake(true, 3)
	srv, cl := serve(t, f)
	for _, p := range pages {
		code, _, h := get(t, cl, srv.URL+p)
		if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/login") {
			t.Fatalf("%s without login: %d %s", p, code, h.Get("Location"))
		}
	}
	if code, _ := post(t, cl, srv.URL+"/topics/create", url.Values{"name": {"x"}}); code != http.StatusForbidden {
		t.Fatalf("create without login: %d", code)
	}
	if code, _ := post(t, cl, srv.URL+"/login", url.Values{"accessKey": {"admin"}, "secret": {"wrong"}}); code != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d", code)
	}
	if code, _, _ := get(t, cl, srv.URL+"/"); code != http.StatusSeeOther {
		t.Fatalf("a wrong secret logged in")
	}
	code, h := post(t, cl, srv.URL+"/login?next=/topics", url.Values{"accessKey": {"reader"}, "secret": {"reader-secret"}})
	if code != http.StatusSeeOther || h.Get("Location") != "/topics" {
		t.Fatalf("reader login: %d %s", code, h.Get("Location"))
	}
	ck := h.Get("Set-Cookie")
	if !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "SameSite=Strict") || !strings.Contains(ck, "Max-Age=") {
		t.Fatalf("cookie %q", ck)
	}
	code, body, _ := get(t, cl, srv.URL+"/topics")
	if code != 200 || strings.Contains(body, "create-topic") {
		t.Fatalf("reader's topics page: %d, create form shown: %v", code, strings.Contains(body, "create-topic"))
	}
	tok := csrfOf(t, body)
	if code, _ := post(t, cl, srv.URL+"/topics/create", url.Values{"name": {"x"}, "csrf": {tok}}); code != http.StatusForbidden {
		t.Fatalf("reader create: %d", code)
	}
	if len(f.changed()) != 0 {
		t.Fatalf("reader changed %v", f.changed())
	}
	// An admin in another browser.
	jar, _ := cookiejar.New(nil)
	cl.Jar = jar
	post(t, cl, srv.URL+"/login", url.Values{"accessKey": {"admin"}, "secret": {"admin-secret"}})
	_, body, _ = get(t, cl, srv.URL+"/topics")
	if code, _ := post(t, cl, srv.URL+"/topics/create", url.Values{"name": {"made"}, "csrf": {csrfOf(t, body)}}); code != http.StatusSeeOther {
		t.Fatalf("admin create: %d", code)
	}
	if ch := f.changed(); len(ch) != 1 || ch[0] != "create made" {
		t.Fatalf("admin changes %v", ch)
	}
}

// TestSessionExpires: a session unused for its TTL is gone.
func TestSessionExpires(t *testing.T) {
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c, err := New(Options{Backend: newFake(true, 1), SessionTTL: time.Minute, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post(t, cl, srv.URL+"/login", url.Values{"accessKey": {"admin"}, "secret": {"admin-secret"}})
	if code, _, _ := get(t, cl, srv.URL+"/"); code != 200 {
		t.Fatalf("after login: %d", code)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if code, _, _ := get(t, cl, srv.URL+"/"); code != http.StatusSeeOther {
		t.Fatalf("after expiry: %d", code)
	}
}
