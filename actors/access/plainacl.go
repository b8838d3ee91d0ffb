package access

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"go.yaml.in/yaml/v3"
)

// plain_acl.yml, RocketMQ ACL 1.0's account file:
//
//	globalWhiteRemoteAddresses:    # only with the IP-bypass compatibility option
//	  - 10.10.103.*
//	accounts:
//	  - accessKey: alice-app        # more than 6 characters
//	    secretKey: 4f1c2a9e7b       # the scalar's literal text (an unquoted number too)
//	    whiteRemoteAddress: 10.0.*.*   # blank: from anywhere
//	    admin: false
//	    defaultTopicPerm: DENY      # DENY | PUB | SUB | PUB|SUB ; absent: DENY
//	    defaultGroupPerm: SUB
//	    topicPerms: [orders=PUB, audit=DENY]
//	    groupPerms: [billing=SUB]
//
// dataVersion (written by RocketMQ's admin API) is accepted and ignored.
//
// A file with no accounts is an error (ErrNoAccounts): an empty or
// truncated file, as a tool that truncates and then rewrites leaves it for
// a moment, would otherwise refuse every request, the cluster's own
// registrations and heartbeats included. A file that really means to
// refuse everyone says so with
//
//	noAccounts: true              # and no account
// Anything else is an error naming its line: an unknown key (a typo must
// not silently drop a restriction), an unknown permission, a bad address
// pattern, a short or repeated access key, and RocketMQ's published
// default accounts (RocketMQ or rocketmq2 with secret 12345678), which
// scanners try first.

// Limits of an account's keys.
const (
	// MinKeyLen is RocketMQ's: an access or secret key must be longer than
	// 6 characters.
	MinKeyLen = 7
	// MaxAccessKeyLen bounds an access key; a request naming a longer one
	// is refused before any lookup.
	MaxAccessKeyLen = 256
	// MaxSecretKeyLen bounds a secret key in the file.
	MaxSecretKeyLen = 1024
)

// publishedDefaults are the accounts of RocketMQ's shipped plain_acl.yml.
var publishedDefaults = map[string]string{"RocketMQ": "12345678", "rocketmq2": "12345678"}

// PlainACL is a parsed plain_acl.yml: an immutable Directory, safe for use
// from any goroutine.
type PlainACL struct {
	accounts map[string]*PlainAccount
	global   []AddrPattern
	// Warnings are what the file holds that means less than it seems to
	// (for the log).
	Warnings []string
}

var _ Directory = (*PlainACL)(nil)

// Lookup implements Directory.
func (p *PlainACL) Lookup(accessKey string) (Account, bool) {
	if p == nil {
		return nil, false
	}
	a, ok := p.accounts[accessKey]
	if !ok {
		return nil, false
	}
	return a, true
}

// Len is the number of accounts.
func (p *PlainACL) Len() int {
	if p == nil {
		return 0
	}
	return len(p.accounts)
}

// Admins is the number of admin accounts.
func (p *PlainACL) Admins() int {
	if p == nil {
		return 0
	}
	n := 0
	for _, a := range p.accounts {
		if a.admin {
			n++
		}
	}
	return n
}

// GlobalBypass reports whether ip matches globalWhiteRemoteAddresses
// (which only the IP-bypass compatibility option honours).
func (p *PlainACL) GlobalBypass(ip netip.Addr) bool {
	if p == nil {
		return false
	}
	for _, g := range p.global {
		if g.Match(ip) {
			return true
		}
	}
	return false
}

// permRule is a permission and the rule it comes from, as a remark names
// it.
type permRule struct {
	perm Perm
	rule string
}

// PlainAccount is one account of a plain_acl.yml.
type PlainAccount struct {
	name, secret       string
	white              AddrPattern
	admin              bool
	defTopic, defGroup permRule
	topics, groups     map[string]permRule
}

var _ Account = (*PlainAccount)(nil)

// Name implements Account.
func (a *PlainAccount) Name() string { return a.name }

// SecretKey implements Account.
func (a *PlainAccount) SecretKey() string { return a.secret }

// IsAdmin implements Account.
func (a *PlainAccount) IsAdmin() bool { return a.admin }

// FromAllowed implements Account: a blank whiteRemoteAddress allows every
// address, else the address must match it.
func (a *PlainAccount) FromAllowed(ip netip.Addr) bool { return a.white.Blank() || a.white.Match(ip) }

// AddressRule names the account's address rule (for a remark).
func (a *PlainAccount) AddressRule() string { return "whiteRemoteAddress " + a.white.String() }

// BypassFrom reports whether ip matches the account's whiteRemoteAddress,
// which with the IP-bypass compatibility option stands for the signature
// and the permissions (RocketMQ's ACL 1.0 rule).
func (a *PlainAccount) BypassFrom(ip netip.Addr) bool { return a.white.Match(ip) }

// Allows implements Account: the resource's own entry, else the default;
// DENY wins over everything (an entry given twice with DENY once denies).
func (a *PlainAccount) Allows(n Need, _ netip.Addr) (bool, string) {
	if a.admin {
		return true, "admin"
	}
	table, def := a.topics, a.defTopic
	if n.Kind == KindGroup {
		table, def = a.groups, a.defGroup
	}
	r, ok := table[n.Name]
	if !ok {
		r = def
	}
	return r.perm.Grants(n.Perm), r.rule
}

// ParsePlainACL reads a plain_acl.yml; path only names the file in
// errors, each of which is "path:line: what" (all of them, joined).
func ParsePlainACL(data []byte, path string) (*PlainACL, error) {
	p := &parser{path: path, acl: &PlainACL{accounts: map[string]*PlainAccount{}}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Content) > 0 {
		p.root(deref(doc.Content[0]))
	}
	if len(p.errs) > 0 {
		return nil, errors.New(strings.Join(p.errs, "\n"))
	}
	switch {
	case len(p.acl.accounts) == 0 && !p.noAccounts:
		return nil, fmt.Errorf("%s: %w (an empty or truncated file?); a file meant to refuse everyone says noAccounts: true", path, ErrNoAccounts)
	case len(p.acl.accounts) > 0 && p.noAccounts:
		return nil, fmt.Errorf("%s:%d: noAccounts: true, but the file has %d accounts", path, p.noAccountsLine, len(p.acl.accounts))
	case len(p.acl.accounts) == 0:
		p.acl.Warnings = append(p.acl.Warnings, path+": noAccounts: true: every request is refused")
	}
	return p.acl, nil
}

// ErrNoAccounts is a plain_acl.yml without accounts that does not say
// noAccounts: true.
var ErrNoAccounts = errors.New("no accounts")

type parser struct {
	path string
	acl  *PlainACL
	errs []string
	// noAccounts is the file's noAccounts: true, at noAccountsLine.
	noAccounts     bool
	noAccountsLine int
}

func (p *parser) fail(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, fmt.Sprintf("%s:%d: %s", p.path, line, fmt.Sprintf(format, args...)))
}

// deref follows aliases.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// pairs walks a mapping, refusing repeated keys.
func (p *parser) pairs(m *yaml.Node, what string, fn func(key string, k, v *yaml.Node)) {
	if isNull(m) {
		return
	}
	if m.Kind != yaml.MappingNode {
		p.fail(m, "%s: want a mapping", what)
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := deref(m.Content[i]), deref(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			p.fail(k, "%s: a key must be a name", what)
			continue
		}
		if seen[k.Value] {
			p.fail(k, "%s: %s given twice", what, k.Value)
			continue
		}
		seen[k.Value] = true
		fn(k.Value, k, v)
	}
}

// list returns a sequence's scalars (null: none).
func (p *parser) list(n *yaml.Node, what string) []*yaml.Node {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.fail(n, "%s: want a list", what)
		return nil
	}
	var out []*yaml.Node
	for _, it := range n.Content {
		it = deref(it)
		if it.Kind != yaml.ScalarNode {
			p.fail(it, "%s: want plain values", what)
			continue
		}
		out = append(out, it)
	}
	return out
}

// scalar returns a scalar's literal text ("" for null).
func (p *parser) scalar(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		p.fail(n, "%s: want a plain value", what)
		return "", false
	}
	if isNull(n) {
		return "", true
	}
	return n.Value, true
}

func (p *parser) root(n *yaml.Node) {
	p.pairs(n, "plain_acl.yml", func(key string, k, v *yaml.Node) {
		switch key {
		case "globalWhiteRemoteAddresses":
			for _, it := range p.list(v, key) {
				pat, err := ParseAddrPattern(it.Value)
				if err != nil {
					p.fail(it, "%s: %v", key, err)
					continue
				}
				if !pat.Blank() {
					p.acl.global = append(p.acl.global, pat)
				}
			}
			if len(p.acl.global) > 0 {
				p.acl.Warnings = append(p.acl.Warnings, fmt.Sprintf(
					"%s:%d: globalWhiteRemoteAddresses lets addresses in without a signature only with --acl-ip-bypass; otherwise it is ignored",
					p.path, k.Line))
			}
		case "accounts":
			if isNull(v) {
				return
			}
			if v.Kind != yaml.SequenceNode {
				p.fail(v, "accounts: want a list of accounts")
				return
			}
			for _, a := range v.Content {
				p.account(deref(a))
			}
		case "noAccounts":
			if s, ok := p.scalar(v, key); ok {
				switch s {
				case "true":
					p.noAccounts, p.noAccountsLine = true, k.Line
				case "false":
				default:
					p.fail(v, "noAccounts: want true or false, not %q", s)
				}
			}
		case "dataVersion":
		default:
			p.fail(k, "unknown key %q (want globalWhiteRemoteAddresses, accounts, noAccounts or dataVersion)", key)
		}
	})
}

func (p *parser) account(n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		p.fail(n, "accounts: each account is a mapping (accessKey: ..., secretKey: ...)")
		return
	}
	a := &PlainAccount{topics: map[string]permRule{}, groups: map[string]permRule{},
		defTopic: permRule{PermDeny, "defaultTopicPerm (absent: DENY)"},
		defGroup: permRule{PermDeny, "defaultGroupPerm (absent: DENY)"}}
	errsBefore := len(p.errs)
	var akNode *yaml.Node
	what := func() string {
		if a.name == "" {
			return fmt.Sprintf("account at line %d", n.Line)
		}
		return "account " + a.name
	}
	p.pairs(n, "account", func(key string, k, v *yaml.Node) {
		switch key {
		case "accessKey":
			akNode = v
			a.name, _ = p.scalar(v, key)
		case "secretKey":
			a.secret, _ = p.scalar(v, key)
		case "whiteRemoteAddress":
			s, ok := p.scalar(v, key)
			if !ok {
				return
			}
			pat, err := ParseAddrPattern(s)
			if err != nil {
				p.fail(v, "%s: whiteRemoteAddress: %v", what(), err)
				return
			}
			a.white = pat
		case "admin":
			s, _ := p.scalar(v, key)
			switch strings.ToLower(s) {
			case "true":
				a.admin = true
			case "false", "":
			default:
				p.fail(v, "%s: admin: want true or false, not %q", what(), s)
			}
		case "defaultTopicPerm", "defaultGroupPerm":
			s, _ := p.scalar(v, key)
			perm, ok := parsePerm(s)
			if !ok {
				p.fail(v, "%s: %s: unknown permission %q (want DENY, PUB, SUB or PUB|SUB)", what(), key, s)
				return
			}
			r := permRule{perm, key + "=" + PermString(perm)}
			if key == "defaultTopicPerm" {
				a.defTopic = r
			} else {
				a.defGroup = r
			}
		case "topicPerms", "groupPerms":
			for _, it := range p.list(v, key) {
				p.resourcePerm(a, key, it, what)
			}
		default:
			p.fail(k, "%s: unknown key %q (want accessKey, secretKey, whiteRemoteAddress, admin, defaultTopicPerm, defaultGroupPerm, topicPerms or groupPerms)",
				what(), key)
		}
	})
	p.checkKeys(a, n, akNode, what)
	if len(p.errs) > errsBefore {
		return
	}
	p.acl.accounts[a.name] = a
}

// checkKeys validates the account's access and secret keys.
func (p *parser) checkKeys(a *PlainAccount, n, akNode *yaml.Node, what func() string) {
	at := n
	if akNode != nil {
		at = akNode
	}
	switch {
	case a.name == "":
		p.fail(at, "%s: accessKey is missing or empty", what())
		return
	case len(a.name) < MinKeyLen || len(a.name) > MaxAccessKeyLen:
		p.fail(at, "%s: accessKey must be %d to %d characters long", what(), MinKeyLen, MaxAccessKeyLen)
	case strings.IndexFunc(a.name, func(r rune) bool { return r < 0x21 || r == 0x7f }) >= 0:
		p.fail(at, "%s: accessKey holds white space or control characters", what())
	}
	switch {
	case a.secret == "":
		p.fail(at, "%s: secretKey is missing or empty", what())
	case len(a.secret) < MinKeyLen || len(a.secret) > MaxSecretKeyLen:
		p.fail(at, "%s: secretKey must be %d to %d characters long", what(), MinKeyLen, MaxSecretKeyLen)
	case publishedDefaults[a.name] == a.secret:
		p.fail(at, "%s: this is RocketMQ's published default account (secret %s), which scanners try first: choose another secret",
			what(), a.secret)
	}
	if _, dup := p.acl.accounts[a.name]; dup {
		p.fail(at, "%s: accessKey given to two accounts", what())
	}
}

// resourcePerm reads one "name=PERM" entry of topicPerms or groupPerms.
func (p *parser) resourcePerm(a *PlainAccount, key string, it *yaml.Node, what func() string) {
	name, perm, ok := strings.Cut(it.Value, "=")
	name = strings.TrimSpace(name)
	if !ok || strings.Contains(perm, "=") {
		p.fail(it, "%s: %s: want name=PERM, not %q", what(), key, it.Value)
		return
	}
	pm, ok := parsePerm(strings.TrimSpace(perm))
	if !ok {
		p.fail(it, "%s: %s: %q: unknown permission %q (want DENY, PUB, SUB or PUB|SUB)", what(), key, it.Value, perm)
		return
	}
	table := a.topics
	if key == "groupPerms" {
		table = a.groups
		name = strings.TrimPrefix(name, retryGroupPrefix)
	}
	if !validResourceName(name) {
		p.fail(it, "%s: %s: %q is not a valid name (1 to 255 of [%%|a-zA-Z0-9_-])", what(), key, name)
		return
	}
	entry := name + "=" + PermString(pm)
	if old, dup := table[name]; dup {
		// Deny overrides allow: the DENY bit refuses whatever else is set.
		table[name] = permRule{old.perm | pm, old.rule + ", " + entry}
		return
	}
	table[name] = permRule{pm, key + " " + entry}
}

// validResourceName is RocketMQ's TopicValidator character set.
func validResourceName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '%' || c == '|' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// retryGroupPrefix is the prefix of a group's retry topic: groupPerms name
// the group without it.
const retryGroupPrefix = "%RETRY%"
