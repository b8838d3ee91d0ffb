package access

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// AddrPattern is one of RocketMQ ACL 1.0's address patterns
// (RemoteAddressStrategyFactory), as plain_acl.yml's whiteRemoteAddress
// and globalWhiteRemoteAddresses hold them:
//
//	(blank)                      never matches
//	*  *.*.*.*  *:*:*:*:*:*:*:*  every address
//	192.168.1.7                  one address (IPv4 or IPv6)
//	192.168.1.7,10.0.0.1         a list (each item any pattern but a list)
//	192.168.1.{1,2,3}            the listed last parts
//	192.168.*.*  192.168.1.1-100 a range: fixed leading parts, then one
//	                             part that is * or lo-hi, then only *
//
// IPv6 patterns are read as an address is, in eight groups of hex digits
// ("::" fills zeros; "2001:db8::1-ff", "2001:db8:0:0:*:*:*:*"). An IPv4
// address seen as IPv4-mapped IPv6 (::ffff:a.b.c.d) matches IPv4
// patterns. Unlike RocketMQ, a pattern with a fixed part after a wildcard
// ("10.*.0.1") is an error rather than read loosely.
type AddrPattern struct {
	text string
	any  bool
	alts []addrRange // matches when one of them does (none, and not any: blank)
}

// addrRange is an address of ranges: parts 0..3 (IPv4) or 0..7 (IPv6),
// each matching lo..hi.
type addrRange struct {
	v6     bool
	lo, hi [8]uint16
}

// ParseAddrPattern reads a pattern; the error says what is wrong with it.
func ParseAddrPattern(s string) (AddrPattern, error) {
	s = strings.TrimSpace(s)
	p := AddrPattern{text: s}
	switch s {
	case "":
		return p, nil
	case "*", "*.*.*.*", "*:*:*:*:*:*:*:*":
		p.any = true
		return p, nil
	}
	var items []string
	if strings.HasSuffix(s, "}") {
		open := strings.LastIndexByte(s, '{')
		if open < 0 {
			return p, fmt.Errorf("address pattern %q: '}' without '{'", s)
		}
		head, list := s[:open], s[open+1:len(s)-1]
		if !strings.HasSuffix(head, ".") && !strings.HasSuffix(head, ":") {
			return p, fmt.Errorf("address pattern %q: {...} must be the last part", s)
		}
		for _, last := range strings.Split(list, ",") {
			if last = strings.TrimSpace(last); last == "" {
				return p, fmt.Errorf("address pattern %q: an empty item in {...}", s)
			}
			items = append(items, head+last)
		}
	} else {
		items = strings.Split(s, ",")
	}
	for _, it := range items {
		it = strings.TrimSpace(it)
		if it == "" {
			return p, fmt.Errorf("address pattern %q: an empty item in the list", s)
		}
		if strings.ContainsAny(it, "{}") {
			return p, fmt.Errorf("address pattern %q: {...} only as the last part of a single pattern", s)
		}
		r, err := parseAddrRange(it)
		if err != nil {
			return p, fmt.Errorf("address pattern %q: %w", s, err)
		}
		p.alts = append(p.alts, r)
	}
	return p, nil
}

// parseAddrRange reads one address, with * and lo-hi parts.
func parseAddrRange(s string) (addrRange, error) {
	var r addrRange
	var parts []string
	if strings.Contains(s, ":") {
		r.v6 = true
		var err error
		if parts, err = expandV6(s); err != nil {
			return r, err
		}
	} else {
		parts = strings.Split(s, ".")
		if len(parts) != 4 {
			return r, fmt.Errorf("%q: want four parts a.b.c.d", s)
		}
	}
	base, max := 10, uint64(255)
	if r.v6 {
		base, max = 16, 0xffff
	}
	wild := false // a * or a range was met: only * may follow
	for i, part := range parts {
		part = strings.TrimSpace(part)
		switch {
		case part == "*":
			if i == 0 && !r.v6 {
				return r, fmt.Errorf("%q: the first part must be a number", s)
			}
			r.lo[i], r.hi[i], wild = 0, uint16(max), true
		case wild:
			return r, fmt.Errorf("%q: after a * or a range only * may follow", s)
		case strings.Contains(part, "-"):
			lo, hi, ok := strings.Cut(part, "-")
			a, err1 := strconv.ParseUint(lo, base, 16)
			b, err2 := strconv.ParseUint(hi, base, 16)
			if err1 != nil || err2 != nil || a > max || b > max || a > b || (i == 0 && !r.v6) || !ok {
				return r, fmt.Errorf("%q: bad range %q", s, part)
			}
			r.lo[i], r.hi[i], wild = uint16(a), uint16(b), true
		default:
			n, err := strconv.ParseUint(part, base, 16)
			if err != nil || n > max || (!r.v6 && len(part) > 1 && part[0] == '0') {
				return r, fmt.Errorf("%q: bad part %q", s, part)
			}
			r.lo[i], r.hi[i] = uint16(n), uint16(n)
		}
	}
	return r, nil
}

// expandV6 splits an IPv6 pattern into its eight groups, "::" filled with
// zeros.
func expandV6(s string) ([]string, error) {
	head, tail, double := strings.Cut(s, "::")
	split := func(x string) []string {
		if x == "" {
			return nil
		}
		return strings.Split(x, ":")
	}
	h, t := split(head), split(tail)
	if strings.Contains(tail, "::") {
		return nil, fmt.Errorf("%q: '::' more than once", s)
	}
	n := len(h) + len(t)
	switch {
	case !double && n != 8:
		return nil, fmt.Errorf("%q: want eight groups (or '::')", s)
	case double && n > 7:
		return nil, fmt.Errorf("%q: too many groups", s)
	}
	out := append([]string{}, h...)
	for range 8 - n {
		out = append(out, "0")
	}
	return append(out, t...), nil
}

// Blank reports a pattern that matches nothing (an empty setting; the
// zero AddrPattern).
func (p AddrPattern) Blank() bool { return !p.any && len(p.alts) == 0 }

// String is the pattern as written.
func (p AddrPattern) String() string { return p.text }

// Match reports whether ip matches.
func (p AddrPattern) Match(ip netip.Addr) bool {
	switch {
	case !ip.IsValid():
		return false
	case p.any:
		return true
	}
	ip = ip.Unmap()
	var parts [8]uint16
	v6 := ip.Is6()
	if v6 {
		b := ip.As16()
		for i := range 8 {
			parts[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		}
	} else {
		b := ip.As4()
		for i := range 4 {
			parts[i] = uint16(b[i])
		}
	}
	for _, r := range p.alts {
		if r.v6 == v6 && r.match(&parts) {
			return true
		}
	}
	return false
}

func (r *addrRange) match(parts *[8]uint16) bool {
	n := 4
	if r.v6 {
		n = 8
	}
	for i := range n {
		if parts[i] < r.lo[i] || parts[i] > r.hi[i] {
			return false
		}
	}
	return true
}
