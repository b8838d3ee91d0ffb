package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

// cookieName is the session cookie.
const cookieName = "wheelmq_console"

// maxSessions bounds the sessions kept: past it a login is refused (503),
// never another account's session dropped.
const maxSessions = 1024

// maxAccountSessions bounds one account's sessions: its login past it
// drops that account's oldest. The anonymous sessions of a console
// without access control share maxSessions.
const maxAccountSessions = 32

// session is one browser's login.
type session struct {
	id      string
	creds   Credentials
	ident   Identity
	csrf    string
	expires time.Time
}

// sessions are the console's logins, guarded by mu.
type sessions struct {
	mu  sync.Mutex
	ttl time.Duration
	now func() time.Time
	m   map[string]*session // guarded by mu
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{ttl: ttl, now: now, m: make(map[string]*session)}
}

// randomToken is 128 random bits in hex.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux (Go 1.24+ panics instead)
	return hex.EncodeToString(b[:])
}

// create starts a session and returns a copy of it; false when the
// console holds maxSessions live sessions, none of them the account's to
// drop.
func (s *sessions) create(c Credentials, id Identity) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	limit := maxAccountSessions
	if id.Name == anonymousName {
		limit = maxSessions
	}
	var mine int
	var oldest *session
	for k, v := range s.m {
		if now.After(v.expires) {
			delete(s.m, k)
			continue
		}
		if v.ident.Name == id.Name {
			mine++
			if oldest == nil || v.expires.Before(oldest.expires) {
				oldest = v
			}
		}
	}
	if oldest != nil && (mine >= limit || len(s.m) >= maxSessions) {
		delete(s.m, oldest.id)
	}
	if len(s.m) >= maxSessions {
		return session{}, false
	}
	ss := &session{id: randomToken(), creds: c, ident: id, csrf: randomToken(), expires: now.Add(s.ttl)}
	s.m[ss.id] = ss
	return *ss, true
}

// get returns the live session of r (sliding its expiry), if any.
func (s *sessions) get(r *http.Request) (session, bool) {
	ck, err := r.Cookie(cookieName)
	if err != nil || len(ck.Value) != 32 {
		return session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[ck.Value]
	if !ok {
		return session{}, false
	}
	now := s.now()
	if now.After(ss.expires) {
		delete(s.m, ss.id)
		return session{}, false
	}
	ss.expires = now.Add(s.ttl)
	return *ss, true
}

// drop ends a session.
func (s *sessions) drop(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// setCookie hands the session's id to the browser: HttpOnly, SameSite
// Strict, Secure when the request came over TLS or the console is served
// over TLS (Options.Secure: behind a TLS-terminating proxy too).
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, ss session) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: ss.id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || c.secure, MaxAge: int(c.ttl / time.Second)})
}

// csrfOK checks a form's token against the session's, in constant time.
func csrfOK(ss session, token string) bool {
	return ss.csrf != "" && subtle.ConstantTimeCompare([]byte(ss.csrf), []byte(token)) == 1
}
