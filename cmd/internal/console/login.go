package console

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// loginPage shows the login form (or goes to the overview without ACL).
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if !c.b.ACL() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if c.httpsLogin && r.TLS == nil {
		// The host was checked (ServeHTTP): the redirect stays on it.
		http.Redirect(w, r, "https://"+r.Host+r.URL.RequestURI(), http.StatusSeeOther)
		return
	}
	v := &view{Title: "Log in", Page: "login", ACL: true, Now: c.now(), Query: r.URL.Query(),
		Error: r.URL.Query().Get("error")}
	c.render(w, r, v)
}

// login checks the access key and secret and starts a session. A wrong
// pair is refused with 401 after a short pause (the same for an unknown
// key and a wrong secret); attempts are limited per client address and
// per account (limit.go: 429 with Retry-After); next is followed only to
// a path of this origin.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if !sameOrigin(r) {
		http.Error(w, "cross-origin login refused", http.StatusForbidden)
		return
	}
	if !c.b.ACL() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if c.httpsLogin && r.TLS == nil {
		c.log.Warn().Str("remote", r.RemoteAddr).Msg("console login refused: posted over plain HTTP while the port speaks HTTPS")
		http.Error(w, "log in over HTTPS", http.StatusForbidden)
		return
	}
	creds := Credentials{AccessKey: strings.TrimSpace(r.PostForm.Get("accessKey")), SecretKey: r.PostForm.Get("secret")}
	if len(creds.AccessKey) > 256 {
		creds.AccessKey = creds.AccessKey[:256]
	}
	if ok, wait := c.limit.allow(r.RemoteAddr, creds.AccessKey, c.now()); !ok {
		secs := int((wait + time.Second - 1) / time.Second)
		c.log.Warn().Str("remote", r.RemoteAddr).Str("accessKey", creds.AccessKey).Int("retry_after_s", secs).
			Msg("console login refused: too many attempts")
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		http.Error(w, "too many login attempts: try again in "+strconv.Itoa(secs)+" s", http.StatusTooManyRequests)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	id, err := c.b.Authenticate(ctx, creds)
	if err != nil {
		c.log.Warn().Str("remote", r.RemoteAddr).Str("accessKey", creds.AccessKey).Err(err).Msg("console login refused")
		if errors.Is(err, ErrBadLogin) {
			c.limit.failed(r.RemoteAddr, creds.AccessKey, c.now())
			time.Sleep(200 * time.Millisecond)
		}
		w.WriteHeader(http.StatusUnauthorized)
		v := &view{Title: "Log in", Page: "login", ACL: true, Now: c.now(), Query: r.URL.Query(), Error: err.Error()}
		c.render(w, r, v)
		return
	}
	c.limit.succeeded(creds.AccessKey)
	ss, ok := c.sess.create(creds, id)
	if !ok {
		c.log.Warn().Str("who", id.Name).Str("remote", r.RemoteAddr).Msg("console login refused: the console holds as many sessions as it keeps")
		http.Error(w, "the console holds as many sessions as it keeps: try again later", http.StatusServiceUnavailable)
		return
	}
	c.setCookie(w, r, ss)
	c.log.Info().Str("who", id.Name).Bool("admin", id.Admin).Str("remote", r.RemoteAddr).Msg("console login")
	http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
}

// logout ends the session.
func (c *Console) logout(_ context.Context, r *http.Request, ss session) (string, string, error) {
	c.sess.drop(ss.id)
	if c.b.ACL() {
		return "/login", "", nil
	}
	return "/", "", nil
}
