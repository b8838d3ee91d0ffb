package console

// Login attempts limited per client address and per account: a few
// failures are free, then every failure locks the key for twice as long
// as the last (up to loginMaxLock); a locked key is answered 429 with
// Retry-After before any secret is checked.

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// Login limits.
const (
	// loginFreeFailures is how many failures a key has before it locks.
	loginFreeFailures = 5
	// loginFirstLock is the first lock; each further failure doubles it.
	loginFirstLock = time.Second
	// loginMaxLock bounds a lock.
	loginMaxLock = 15 * time.Minute
	// loginForget is how long a key without a failure is remembered.
	loginForget = 30 * time.Minute
	// loginMaxKeys bounds the keys remembered (the oldest are forgotten
	// first).
	loginMaxKeys = 16384
	// loginRate bounds attempts of one address, failed or not, per
	// second (a token bucket of loginBurst).
	loginRate  = 2.0
	loginBurst = 10.0
)

// attempts is one key's record.
type attempts struct {
	failures int
	until    time.Time // locked until then
	last     time.Time // last failure, or last attempt
	tokens   float64   // rate bucket (addresses only)
}

// limiter remembers login failures by address and by account, guarded
// by mu (CPU only: no I/O under it).
type limiter struct {
	mu   sync.Mutex
	keys map[string]*attempts // guarded by mu
}

// addrKey is the key of a client address: an IPv6 address by its /64 (a
// client has the whole of it).
func addrKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "addr " + host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return "addr " + p.String()
	}
	return "addr " + ip.String()
}

// acctKey is the key of an account name.
func acctKey(name string) string { return "acct " + name }

// get returns key's record, making it (mu held).
func (l *limiter) getLocked(key string, now time.Time) *attempts {
	if l.keys == nil {
		l.keys = map[string]*attempts{}
	}
	a := l.keys[key]
	if a != nil && now.Sub(a.last) > loginForget && !now.Before(a.until) {
		a = nil
	}
	if a == nil {
		if len(l.keys) >= loginMaxKeys {
			l.evictLocked(now)
		}
		a = &attempts{last: now, tokens: loginBurst}
		l.keys[key] = a
	}
	return a
}

// evictLocked forgets the stale keys, or else the oldest one.
func (l *limiter) evictLocked(now time.Time) {
	var oldest string
	var at time.Time
	for k, a := range l.keys {
		if now.Sub(a.last) > loginForget && !now.Before(a.until) {
			delete(l.keys, k)
			continue
		}
		if oldest == "" || a.last.Before(at) {
			oldest, at = k, a.last
		}
	}
	if len(l.keys) >= loginMaxKeys && oldest != "" {
		delete(l.keys, oldest)
	}
}

// allow reports whether a login from addr for account may be checked now;
// if not, how long to wait. It spends one of addr's rate tokens.
func (l *limiter) allow(addr, account string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.getLocked(addrKey(addr), now)
	var wait time.Duration
	if now.Before(a.until) {
		wait = a.until.Sub(now)
	}
	if account != "" {
		if c := l.getLocked(acctKey(account), now); now.Before(c.until) && c.until.Sub(now) > wait {
			wait = c.until.Sub(now)
		}
	}
	if wait > 0 {
		return false, wait
	}
	a.tokens = min(loginBurst, a.tokens+now.Sub(a.last).Seconds()*loginRate)
	a.last = now
	if a.tokens < 1 {
		return false, time.Duration((1 - a.tokens) / loginRate * float64(time.Second))
	}
	a.tokens--
	return true, 0
}

// failed records a failed login from addr for account.
func (l *limiter) failed(addr, account string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failLocked(l.getLocked(addrKey(addr), now), now)
	if account != "" {
		l.failLocked(l.getLocked(acctKey(account), now), now)
	}
}

func (l *limiter) failLocked(a *attempts, now time.Time) {
	a.failures++
	a.last = now
	if n := a.failures - loginFreeFailures; n > 0 {
		lock := loginMaxLock
		if n < 20 {
			lock = min(loginMaxLock, loginFirstLock<<(n-1))
		}
		a.until = now.Add(lock)
	}
}

// succeeded forgets the account's failures (the address's stay: one
// good account must not buy more guesses at others).
func (l *limiter) succeeded(account string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, acctKey(account))
}
