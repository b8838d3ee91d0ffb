package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/recovery"
)

//go:embed templates/*.html static/*
var files embed.FS

// DefaultSessionTTL is how long a login lasts without use.
const DefaultSessionTTL = 8 * time.Hour

// requestTimeout bounds the backend calls of one page.
const requestTimeout = 10 * time.Second

// Options configure a Console. Backend is required.
type Options struct {
	Backend Backend
	Logger  zerolog.Logger
	// SessionTTL is how long a login lasts without use (0: 8 h).
	SessionTTL time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Listen is the address the console is served on (its port, and its
	// host unless a wildcard, are Host values it serves under; "": any
	// port).
	Listen string
	// Hosts are more Host values it serves under ("name" for any port,
	// or "name:port"): the names operators reach it by. An IP literal or
	// localhost with the console's port always works; any other name is
	// refused (421), against DNS rebinding.
	Hosts []string
	// Secure marks the session cookie Secure on every response (the
	// console is served over TLS only); a request over TLS gets it anyway.
	Secure bool
	// HTTPSLogin says the port also speaks HTTPS: the login page asked
	// for over plain HTTP is sent to https://, and a login posted over
	// plain HTTP is refused, so a secret is never typed into a page or
	// sent over a connection in clear.
	HTTPSLogin bool
	// Registerer receives wheelmq_handler_panics_total (nil: not exported).
	Registerer prometheus.Registerer
}

// anonymousName is the identity of a console without access control.
const anonymousName = "anonymous"

// Console serves the web console. It is an http.Handler for "/".
type Console struct {
	b          Backend
	log        zerolog.Logger
	ttl        time.Duration
	now        func() time.Time
	sess       *sessions
	pages      map[string]*template.Template
	mux        *http.ServeMux
	rates      rater
	hosts      hostPolicy
	secure     bool
	httpsLogin bool
	limit      limiter
	panics     *prometheus.CounterVec // wheelmq_handler_panics_total (recover.go)
}

// New parses the templates and builds the console.
func New(o Options) (*Console, error) {
	if o.Backend == nil {
		return nil, errors.New("console: no backend")
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Console{b: o.Backend, log: o.Logger.With().Str("component", "console").Logger(), ttl: o.SessionTTL, now: o.Now,
		hosts: newHostPolicy(o.Listen, o.Hosts), secure: o.Secure, httpsLogin: o.HTTPSLogin}
	c.sess = newSessions(o.SessionTTL, o.Now)
	c.panics = recovery.Counter(o.Registerer)
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c.pages = pages
	c.routes()
	return c, nil
}

// parsePages parses layout.html with each page's template.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	out := make(map[string]*template.Template)
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(files, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", n, err)
		}
		out[base] = t
	}
	return out, nil
}

func (c *Console) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(files, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		http.ServeFileFS(w, r, files, "static/favicon.svg")
	})
	m.HandleFunc("GET /login", c.loginPage)
	m.HandleFunc("POST /login", c.login)
	m.HandleFunc("POST /logout", c.change(false, c.logout))
	m.HandleFunc("GET /{$}", c.read(c.overview))
	m.HandleFunc("GET /stages", c.read(c.stagesPage))
	m.HandleFunc("GET /topics", c.read(c.topicsPage))
	m.HandleFunc("GET /topic", c.read(c.topicPage))
	m.HandleFunc("POST /topics/create", c.change(true, c.createTopic))
	m.HandleFunc("POST /topics/delete", c.change(true, c.deleteTopic))
	m.HandleFunc("GET /groups", c.read(c.groupsPage))
	m.HandleFunc("GET /group", c.read(c.groupPage))
	m.HandleFunc("POST /groups/reset", c.change(true, c.resetGroup))
	m.HandleFunc("GET /messages", c.read(c.messagesPage))
	m.HandleFunc("GET /timers", c.read(c.timersPage))
	m.HandleFunc("POST /timers/cancel", c.change(true, c.cancelTimer))
	m.HandleFunc("GET /cluster", c.read(c.clusterPage))
	m.HandleFunc("GET /api/rates", c.ratesAPI)
	m.HandleFunc("GET /access", c.read(c.accessPage))
	m.HandleFunc("POST /access/users/create", c.change(true, c.createUser))
	m.HandleFunc("POST /access/users/update", c.change(true, c.updateUser))
	m.HandleFunc("POST /access/users/delete", c.change(true, c.deleteUser))
	m.HandleFunc("POST /access/policies/put", c.change(true, c.putPolicy))
	m.HandleFunc("POST /access/policies/delete", c.change(true, c.deletePolicy))
	m.HandleFunc("GET /config", c.read(c.configPage))
	m.HandleFunc("POST /config/update", c.change(true, c.updateConfig))
	m.HandleFunc("GET /deadletters", c.read(c.deadLettersPage))
	m.HandleFunc("POST /deadletters/resend", c.change(true, c.resendDeadLetter))
	m.HandleFunc("POST /topics/send", c.change(true, c.testSend))
	m.HandleFunc("GET /clients", c.read(c.clientsPage))
	m.HandleFunc("GET /lite", c.read(c.litePage))
	c.mux = m
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	if !c.hosts.allows(r.Host, r.TLS != nil) {
		c.log.Warn().Str("remote", r.RemoteAddr).Str("host", quoteHost(r.Host)).Msg("console request refused: a Host it does not serve under")
		misdirected(w)
		return
	}
	c.serveRecovered(c.mux, w, r)
}

// view is what every page template gets.
type view struct {
	Title string
	Page  string
	Who   Identity
	ACL   bool
	CSRF  string
	Flash string
	Error string
	Now   time.Time
	Data  any
	Query url.Values
}

// pageFunc fills a page's view.Data; an error shows on the page.
type pageFunc func(ctx context.Context, r *http.Request, ss session, v *view) error

// sessionOf returns r's session; without ACL every browser gets one (for
// its CSRF token) as an anonymous admin.
func (c *Console) sessionOf(w http.ResponseWriter, r *http.Request) (session, bool) {
	if ss, ok := c.sess.get(r); ok {
		return ss, true
	}
	if c.b.ACL() {
		return session{}, false
	}
	ss, ok := c.sess.create(Credentials{}, Identity{Name: anonymousName, Admin: true, Read: true})
	if ok {
		c.setCookie(w, r, ss)
	}
	return ss, ok
}

// reader is the session of a request that may read, or false after it
// answered the refusal: without a session a page redirects to the login
// and an API (api) answers 401; without SUB or admin, 403.
func (c *Console) reader(w http.ResponseWriter, r *http.Request, api bool) (session, bool) {
	ss, ok := c.sessionOf(w, r)
	switch {
	case !ok && api:
		http.Error(w, "log in first", http.StatusUnauthorized)
	case !ok:
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
	case !ss.ident.Read:
		http.Error(w, "this account may not read (it needs SUB or admin)", http.StatusForbidden)
		return session{}, false
	}
	return ss, ok
}

// read wraps a page: a session that may read, then the page rendered
// (only its live part with ?partial=1).
func (c *Console) read(p pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ss, ok := c.reader(w, r, false)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		v := &view{Who: ss.ident, ACL: c.b.ACL(), CSRF: ss.csrf, Now: c.now(), Query: r.URL.Query(),
			Flash: r.URL.Query().Get("flash")}
		if err := p(ctx, r, ss, v); err != nil {
			v.Error = err.Error()
		}
		c.render(w, r, v)
	}
}

// render executes the page's template ("live" only for ?partial=1).
func (c *Console) render(w http.ResponseWriter, r *http.Request, v *view) {
	t := c.pages[v.Page]
	name := "layout"
	if r.URL.Query().Get("partial") == "1" {
		name = "live"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, v); err != nil {
		c.log.Error().Err(err).Str("page", v.Page).Msg("console page render")
		http.Error(w, "page render failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// changeFunc does one change and returns where to go next and what to
// say there.
type changeFunc func(ctx context.Context, r *http.Request, ss session) (next, flash string, err error)

// change wraps a POST: a session, its CSRF token, the same origin, an
// admin account when admin is set; the change is logged with who made it.
func (c *Console) change(admin bool, f changeFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		ss, ok := c.sess.get(r)
		if !ok {
			http.Error(w, "no session: log in again", http.StatusForbidden)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		if !csrfOK(ss, r.PostForm.Get("csrf")) || !sameOrigin(r) {
			c.log.Warn().Str("remote", r.RemoteAddr).Str("path", r.URL.Path).Str("who", ss.ident.Name).
				Msg("console change refused: missing or wrong CSRF token")
			http.Error(w, "missing or wrong CSRF token", http.StatusForbidden)
			return
		}
		if admin && !ss.ident.Admin {
			http.Error(w, "this change needs an admin account", http.StatusForbidden)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		next, flash, err := f(ctx, r, ss)
		ev := c.log.Info()
		if err != nil {
			ev = c.log.Warn().Err(err)
		}
		ev.Str("who", ss.ident.Name).Str("remote", r.RemoteAddr).Str("action", r.URL.Path).
			Str("form", formSummary(r)).Bool("ok", err == nil).Msg("console change")
		if err != nil {
			flash = "failed: " + err.Error()
		}
		if next == "" {
			next = "/"
		}
		http.Redirect(w, r, addFlash(safeNext(next), flash), http.StatusSeeOther)
	}
}

// sameOrigin refuses a request whose Origin header names another host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return o == ""
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// formSummary is the form's fields for the change log (never the token).
func formSummary(r *http.Request) string {
	var b strings.Builder
	for k, vs := range r.PostForm {
		if k == "csrf" || k == "secret" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + strings.Join(vs, ","))
	}
	return b.String()
}

func addFlash(next, flash string) string {
	if flash == "" {
		return next
	}
	sep := "?"
	if strings.Contains(next, "?") {
		sep = "&"
	}
	return next + sep + "flash=" + url.QueryEscape(flash)
}

// rater turns cumulative counters into per-second rates between page
// loads: it keeps the last reading at least a second old.
type rater struct {
	mu   sync.Mutex
	prev map[string]sample // guarded by mu
	last map[string]sample // guarded by mu
}

type sample struct {
	v  float64
	at time.Time
}

// rate is the per-second rate of counter key at v, now (NaN-free: 0 with
// no earlier reading).
func (r *rater) rate(key string, v float64, now time.Time) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.prev, r.last = map[string]sample{}, map[string]sample{}
	}
	l, ok := r.last[key]
	if !ok || now.Sub(l.at) >= time.Second {
		if ok {
			r.prev[key] = l
		}
		r.last[key] = sample{v, now}
	}
	p, ok := r.prev[key]
	if !ok {
		return 0
	}
	dt := now.Sub(p.at).Seconds()
	if dt <= 0 || v < p.v {
		return 0
	}
	return (v - p.v) / dt
}
