package auth

import (
	"fmt"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Fixed is a Source that never changes.
type Fixed struct{ Dir Directory }

// Current implements Source.
func (f Fixed) Current() (Directory, uint64) { return f.Dir, 1 }

// Join is a Source of several: their directories asked in order (a
// Union), its number the sum of theirs (each only grows, so the sum
// changes whenever one of them does). A nil source is skipped.
func Join(sources ...Source) Source { return joined(sources) }

type joined []Source

// Current implements Source.
func (j joined) Current() (Directory, uint64) {
	u := make(Union, 0, len(j))
	var gen uint64
	for _, s := range j {
		if s == nil {
			continue
		}
		d, g := s.Current()
		u, gen = append(u, d), gen+g
	}
	return u, gen
}

// Reason is why a request was refused: the label of
// wheelmq_auth_refused_total.
type Reason uint8

// The reasons.
const (
	ReasonNone         Reason = iota // allowed
	ReasonAnonymous                  // no AccessKey
	ReasonUnknownKey                 // an AccessKey no account has (or longer than MaxAccessKeyLen)
	ReasonBadSignature               // the signature does not match the account's secret
	ReasonAddress                    // the account may not be used from the remote address
	ReasonPermission                 // the account lacks a permission on a topic or group
	ReasonAdminOnly                  // the request needs an admin account
	ReasonStaleDate                  // a gRPC call's signed date is missing or too far from the server's clock
	ReasonMalformed                  // a gRPC call's authorization header is missing or does not parse
	numReasons
)

var reasonNames = [numReasons]string{"", "anonymous", "unknown_key", "bad_signature", "address", "permission", "admin_only", "stale_date", "malformed"}

// String is the metric label.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "reason" + strconv.Itoa(int(r))
}

// Refusal is a request the Guard refused: the client gets NO_PERMISSION
// (16) with Remark, which names the account, the resource and the rule,
// never a secret.
type Refusal struct {
	Reason Reason
	Remark string
}

// Error makes a Refusal usable as an error.
func (r *Refusal) Error() string { return r.Remark }

// GuardOptions configure a Guard.
type GuardOptions struct {
	// Source is the directory of accounts (required).
	Source Source
	// IPBypass is RocketMQ ACL 1.0's rule, for compatibility only:
	// addresses in globalWhiteRemoteAddresses, and an account's
	// whiteRemoteAddress, stand for the signature (and the permissions).
	// Off, IP rules only restrict a valid signature.
	IPBypass bool
	// Logger receives the refusals, at most one line per second per
	// reason (with the count of the lines left out).
	Logger zerolog.Logger
	// Registerer receives wheelmq_auth_refused_total{reason} and
	// wheelmq_auth_bypassed_total (nil: not registered).
	Registerer prometheus.Registerer
}

// Guard authenticates and authorizes requests: the signature, the account
// and its address rule, then what the request needs. Safe for concurrent
// use from every event loop; a check is CPU only (an HMAC-SHA1 and map
// lookups) and never blocks.
type Guard struct {
	*guardShared
	port  string // names the port in the log
	extra Source // asked before the shared source (ForPort), or nil
}

// guardShared is what the Guards of one process share.
type guardShared struct {
	src      Source
	bypass   bool
	log      zerolog.Logger
	counts   [numReasons]prometheus.Counter
	bypassed prometheus.Counter
	limits   [numReasons]logLimit
}

// logLimit lets one refusal line per second through.
type logLimit struct {
	last       atomic.Int64 // unix nanoseconds of the last line
	suppressed atomic.Int64 // refusals not logged since
}

// NewGuard returns a Guard over o.Source.
func NewGuard(o GuardOptions) *Guard {
	s := &guardShared{src: o.Source, bypass: o.IPBypass, log: o.Logger}
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wheelmq_auth_refused_total",
		Help: "Requests refused by the ACL (NO_PERMISSION; gRPC: UNAUTHORIZED), by reason: anonymous, unknown_key, bad_signature, address, permission, admin_only, stale_date, malformed.",
	}, []string{"reason"})
	for r := ReasonAnonymous; r < numReasons; r++ {
		s.counts[r] = vec.WithLabelValues(r.String())
	}
	s.bypassed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wheelmq_auth_bypassed_total",
		Help: "Requests let in without a signature by an IP whitelist (--acl-ip-bypass).",
	})
	if o.Registerer != nil {
		o.Registerer.MustRegister(vec, s.bypassed)
	}
	if o.IPBypass {
		o.Logger.Warn().Msg("ACL IP bypass on (--acl-ip-bypass): whitelisted addresses need no signature, as in RocketMQ ACL 1.0; " +
			"anyone who can use or claim such an address gets in")
	}
	return &Guard{guardShared: s, port: "broker"}
}

// ForPort returns a Guard sharing g's counters and log limits for a port:
// port names it in the log, and extra (nil: none) is asked before g's
// source (the broker's ACL 2.0 users, the embedded name server's internal
// broker credential).
func (g *Guard) ForPort(port string, extra Source) *Guard {
	return &Guard{guardShared: g.guardShared, port: port, extra: extra}
}

// Named returns g (the same sources, counters and log limits) naming its
// port port in the log.
func (g *Guard) Named(port string) *Guard {
	return &Guard{guardShared: g.guardShared, port: port, extra: g.extra}
}

// IPBypass reports whether the IP-bypass compatibility option is on.
func (g *Guard) IPBypass() bool { return g.bypass }

// generation is the number of the directory in force, without making it
// (no allocation): read it before a lookup whose result is cached by it.
func (g *Guard) generation() uint64 {
	_, gen := g.src.Current()
	if g.extra != nil {
		_, eg := g.extra.Current()
		gen += eg
	}
	return gen
}

// directory returns the directory in force and its number.
func (g *Guard) directory() (Directory, uint64) {
	if g.extra != nil {
		// The extra number first: see Source (a reader that sees a new
		// number sees the directory it numbers).
		e, eg := g.extra.Current()
		d, gen := g.src.Current()
		return Union{e, d}, eg + gen
	}
	return g.src.Current()
}

// Check decides a request that needs needs, read from remote: nil lets it
// through; a refusal is counted and logged (rate-limited) already.
func (g *Guard) Check(remote netip.AddrPort, cmd *remoting.Command, needs Needs) *Refusal {
	dir, _ := g.directory()
	ip := remote.Addr().Unmap()
	ref := g.decide(dir, ip, cmd, needs)
	if ref != nil {
		g.refused(remote, cmd.Code, cmd.ExtFields[FieldAccessKey], ref)
	}
	return ref
}

// CheckDeferred checks a request's Deferred need once its handler knows
// the topic (the request was authenticated before; this checks it again,
// against the directory now in force).
func (g *Guard) CheckDeferred(remote netip.AddrPort, cmd *remoting.Command, perm Perm, topic string) *Refusal {
	return g.Check(remote, cmd, Needs{Resources: []Need{TopicNeed(topic, perm)}})
}

func (g *Guard) decide(dir Directory, ip netip.Addr, cmd *remoting.Command, needs Needs) *Refusal {
	if g.bypass {
		if b, ok := dir.(globalBypasser); ok && b.GlobalBypass(ip) {
			g.bypassed.Inc()
			return nil
		}
	}
	ak := cmd.ExtFields[FieldAccessKey]
	if ak == "" {
		return &Refusal{ReasonAnonymous, "[ACL] anonymous request refused: sign it with an AccessKey"}
	}
	if len(ak) > MaxAccessKeyLen {
		return &Refusal{ReasonUnknownKey, fmt.Sprintf("[ACL] accessKey of %d bytes refused (at most %d)", len(ak), MaxAccessKeyLen)}
	}
	acct, ok := dir.Lookup(ak)
	if !ok {
		return &Refusal{ReasonUnknownKey, authFailed(ak)}
	}
	if g.bypass {
		if b, ok := acct.(bypasser); ok && b.BypassFrom(ip) {
			g.bypassed.Inc()
			return nil
		}
	}
	if len(cmd.ExtFields[FieldSignature]) != signatureLen || !Verify(cmd, acct.SecretKey()) {
		return &Refusal{ReasonBadSignature, authFailed(ak)}
	}
	return decideAccount(acct, ip, cmd.Code, needs)
}

// signatureLen is the length of a base64 HMAC-SHA1.
const signatureLen = 28

// authFailed is the one remark for an unknown key and a bad signature:
// the client is not told which access keys exist (the log says which).
func authFailed(ak string) string {
	return fmt.Sprintf("[ACL] accessKey %s: unknown, or the signature does not match its secret", quoteKey(ak))
}

// decideAccount decides an authenticated request.
func decideAccount(acct Account, ip netip.Addr, code int32, needs Needs) *Refusal {
	if !acct.FromAllowed(ip) {
		rule := "its address rule"
		if r, ok := acct.(interface{ AddressRule() string }); ok {
			rule = "rule " + r.AddressRule()
		}
		return &Refusal{ReasonAddress, fmt.Sprintf("[ACL] accessKey %s may not be used from %s (%s)", quoteKey(acct.Name()), ip, rule)}
	}
	if acct.IsAdmin() {
		return nil
	}
	if needs.Admin {
		return &Refusal{ReasonAdminOnly, fmt.Sprintf("[ACL] accessKey %s: request code %d needs an admin account", quoteKey(acct.Name()), code)}
	}
	for _, n := range needs.Resources {
		if ok, rule := acct.Allows(n, ip); !ok {
			return &Refusal{ReasonPermission, fmt.Sprintf("[ACL] accessKey %s: no %s on %s %s (rule %s)",
				quoteKey(acct.Name()), PermString(n.Perm), n.Kind, n.Name, rule)}
		}
	}
	return nil
}

// quoteKey shows an access key in a remark or a log line: as it is when
// it is plain text of a sane length, else quoted and cut.
func quoteKey(ak string) string {
	const show = 64
	plain := len(ak) <= show
	for i := 0; plain && i < len(ak); i++ {
		plain = ak[i] > 0x20 && ak[i] < 0x7f
	}
	if plain {
		return ak
	}
	if len(ak) > show {
		return strconv.Quote(ak[:show]) + "..."
	}
	return strconv.Quote(ak)
}

// refused counts a refusal and logs it, at most once a second per reason.
func (g *Guard) refused(remote netip.AddrPort, code int32, ak string, ref *Refusal) {
	g.refusedWith(remote, ak, ref, func(ev *zerolog.Event) *zerolog.Event {
		return ev.Int32("request_code", code).Str("hint", Hint(code, ref.Reason))
	})
}

// RefusedCall counts and logs (rate-limited as every refusal) a refusal
// decided outside the Guard: a gRPC call (method names it) whose
// authorization the gateway checked.
func (g *Guard) RefusedCall(remote netip.AddrPort, method, ak string, ref *Refusal) {
	g.refusedWith(remote, ak, ref, func(ev *zerolog.Event) *zerolog.Event {
		return ev.Str("method", method).Str("hint", Hint(0, ref.Reason))
	})
}

// refusedWith counts ref and logs it with what names the request.
func (g *Guard) refusedWith(remote netip.AddrPort, ak string, ref *Refusal, what func(*zerolog.Event) *zerolog.Event) {
	g.counts[ref.Reason].Inc()
	l := &g.limits[ref.Reason]
	now := time.Now().UnixNano()
	last := l.last.Load()
	if now-last < int64(time.Second) || !l.last.CompareAndSwap(last, now) {
		l.suppressed.Add(1)
		return
	}
	ev := what(g.log.Warn().Str("port", g.port).Str("remote", remote.String())).
		Str("reason", ref.Reason.String()).Str("remark", ref.Remark)
	if ak != "" {
		ev = ev.Str("access_key", quoteKey(ak))
	}
	ev.Int64("suppressed", l.suppressed.Swap(0)).Msg("request refused by the ACL")
}

// Lookup finds an account in the directory in force (the ACL file's and
// the extra sources'), for callers that authenticate by other means than
// a signed request (the broker's web console's login).
func (g *Guard) Lookup(accessKey string) (Account, bool) {
	dir, _ := g.directory()
	return dir.Lookup(accessKey)
}
