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

// maxSessions bounds the sessions kept (a login past it drops the oldest).
const maxSessions = 1024

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

// create starts a session and returns a copy of it.
func (s *sessions) create(c Credentials, id Identity) session {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, v := range s.m {
		if now.After(v.expires) {
			delete(s.m, k)
		}
	}
	if len(s.m) >= maxSessions {
		var oldest *session
		for _, v := range s.m {
			if oldest == nil || v.expires.Before(oldest.expires) {
				oldest = v
			}
		}
		delete(s.m, oldest.id)
	}
	ss := &session{id: randomToken(), creds: c, ident: id, csrf: randomToken(), expires: now.Add(s.ttl)}
	s.m[ss.id] = ss
	return *ss
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
// Strict, Secure when the request came over TLS.
func setCookie(w http.ResponseWriter, r *http.Request, ss session, ttl time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: ss.id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(ttl / time.Second)})
}

// csrfOK checks a form's token against the session's, in constant time.
func csrfOK(ss session, token string) bool {
	return ss.csrf != "" && subtle.ConstantTimeCompare([]byte(ss.csrf), []byte(token)) == 1
}
