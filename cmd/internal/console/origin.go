package console

// Where the console answers from and sends browsers to: the Host values
// it serves under (against DNS rebinding) and same-origin redirects.

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// hostPolicy is the Host values the console serves under (immutable).
type hostPolicy struct {
	// port is the listen port ("" : any port is the console's).
	port string
	// listenHost is the listen address's host when it names one (not a
	// wildcard).
	listenHost string
	// extra are Options.Hosts: "name" (any port) or "name:port",
	// lowercased.
	extra map[string]bool
}

func newHostPolicy(listen string, hosts []string) hostPolicy {
	p := hostPolicy{extra: map[string]bool{}}
	if h, port, err := net.SplitHostPort(listen); err == nil {
		p.port = port
		if ip, err := netip.ParseAddr(h); err != nil || !ip.IsUnspecified() {
			p.listenHost = normHost(h)
		}
	}
	for _, h := range hosts {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			p.extra[h] = true
		}
	}
	return p
}

// normHost lowercases a host and drops its brackets and trailing dot.
func normHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
	return h
}

// allows reports whether the console serves under the Host value hostport
// (r.Host) reached over tls. A name the operator did not list is refused,
// so that a page that rebinds its own name to this address gets nothing;
// an IP literal and localhost with the console's port are its own.
func (p hostPolicy) allows(hostport string, tls bool) bool {
	hostport = strings.ToLower(hostport)
	h, port, err := net.SplitHostPort(hostport)
	if err != nil {
		h, port = hostport, "80"
		if tls {
			port = "443"
		}
	}
	h = normHost(h)
	if h == "" {
		return false
	}
	if p.extra[h] || p.extra[net.JoinHostPort(h, port)] || p.extra[hostport] {
		return true
	}
	if p.port != "" && port != p.port {
		return false
	}
	if h == "localhost" || h == p.listenHost {
		return true
	}
	_, err = netip.ParseAddr(h)
	return err == nil
}

// safeNext returns next when it is a path on this origin, else "/": not
// "//host", "/\host" (a browser reads a backslash as a slash), a scheme
// ("http:", "javascript:"), or anything with control characters.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || len(next) > 2048 {
		return "/"
	}
	if len(next) > 1 && (next[1] == '/' || next[1] == '\\') {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	return next
}

// misdirected answers a request for a Host the console does not serve
// under.
func misdirected(w http.ResponseWriter) {
	http.Error(w, "this console does not serve that host name (add it with --console-hosts)", http.StatusMisdirectedRequest)
}

// quoteHost bounds a Host value for the log.
func quoteHost(h string) string {
	if len(h) > 128 {
		h = h[:128] + "..."
	}
	return strconv.Quote(h)
}
