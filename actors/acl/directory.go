package acl

// The published snapshot and its access.Directory: who a signed request
// comes from, and what its ACL lets it do.

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/wheelmq/wheelmq/actors/access"
)

// Snapshot is an immutable copy of the users and ACLs. It is an
// access.Directory.
type Snapshot struct {
	users    map[string]*account // every user, disabled ones too
	acls     map[string]ACL      // by user name
	accounts int                 // users that Lookup finds (enabled)
}

var _ access.Directory = (*Snapshot)(nil)

// newSnapshot builds the snapshot of users and acls (neither is modified
// afterwards; an ACL whose user is missing is left out).
func newSnapshot(users map[string]User, acls map[string]ACL) *Snapshot {
	s := &Snapshot{users: make(map[string]*account, len(users)), acls: make(map[string]ACL, len(acls))}
	for name, u := range users {
		a := &account{user: u}
		if acl, ok := acls[name]; ok {
			a.acl = acl
			s.acls[name] = acl
		}
		s.users[name] = a
		if u.Status != StatusDisable {
			s.accounts++
		}
	}
	return s
}

// Lookup implements access.Directory: the enabled user with that name. A
// disabled user is not found, so its requests are refused as an unknown
// AccessKey's.
func (s *Snapshot) Lookup(accessKey string) (access.Account, bool) {
	a, ok := s.users[accessKey]
	if !ok || a.user.Status == StatusDisable {
		return nil, false
	}
	return a, true
}

// User returns one user.
func (s *Snapshot) User(name string) (User, bool) {
	a, ok := s.users[name]
	if !ok {
		return User{}, false
	}
	return a.user, true
}

// Users lists the users whose name contains filter ("" all), by name
// (RocketMQ's listUser filter).
func (s *Snapshot) Users(filter string) []User {
	var out []User
	for name, a := range s.users {
		if strings.Contains(name, filter) {
			out = append(out, a.user)
		}
	}
	slices.SortFunc(out, func(a, b User) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Len is the number of users and of users Lookup finds.
func (s *Snapshot) Len() (users, enabled int) { return len(s.users), s.accounts }

// ACL returns one user's ACL.
func (s *Snapshot) ACL(user string) (ACL, bool) {
	a, ok := s.acls[user]
	return a, ok
}

// ACLs lists the ACLs whose subject contains subjectFilter, each with only
// the entries whose resource key contains resourceFilter (and without the
// policies and ACLs left empty), by subject. Empty filters match all.
func (s *Snapshot) ACLs(subjectFilter, resourceFilter string) []ACL {
	var out []ACL
	for name, a := range s.acls {
		if !strings.Contains(Subject(name), subjectFilter) {
			continue
		}
		if resourceFilter != "" {
			kept := ACL{User: a.User}
			for _, p := range a.Policies {
				var es []Entry
				for _, e := range p.Entries {
					if strings.Contains(e.Resource.Key(), resourceFilter) {
						es = append(es, e)
					}
				}
				if len(es) > 0 {
					kept.Policies = append(kept.Policies, Policy{Type: p.Type, Entries: es})
				}
			}
			if len(kept.Policies) == 0 {
				continue
			}
			a = kept
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b ACL) int { return strings.Compare(a.User, b.User) })
	return out
}

// View publishes the current Snapshot; safe from any goroutine. It is an
// access.Directory that always asks the latest snapshot, and an access.Source
// (its number counts the snapshots published, for the caches of looked-up
// accounts).
type View struct {
	p   atomic.Pointer[Snapshot]
	gen atomic.Uint64 // bumped after each store of p
}

var (
	_ access.Directory = (*View)(nil)
	_ access.Source    = (*View)(nil)
)

// store publishes s, then bumps the number: a reader that sees the new
// number (Current reads it first) sees s or a later snapshot.
func (v *View) store(s *Snapshot) {
	v.p.Store(s)
	v.gen.Add(1)
}

// Current implements access.Source.
func (v *View) Current() (access.Directory, uint64) {
	gen := v.gen.Load()
	return v.Load(), gen
}

// Load returns the current snapshot (never nil: empty before Init).
func (v *View) Load() *Snapshot {
	if s := v.p.Load(); s != nil {
		return s
	}
	return newSnapshot(nil, nil)
}

// Init publishes the snapshot loaded at start-up, before the stage runs.
// Only the broker's start-up calls it; afterwards the stage is the only
// writer.
func (v *View) Init(s *Snapshot) { v.store(s) }

// Lookup implements access.Directory on the current snapshot.
func (v *View) Lookup(accessKey string) (access.Account, bool) { return v.Load().Lookup(accessKey) }

// account is one enabled user and its ACL, as auth sees it.
type account struct {
	user User
	acl  ACL // zero: none
}

var _ access.Account = (*account)(nil)

// Name implements access.Account.
func (a *account) Name() string { return a.user.Name }

// SecretKey implements access.Account: the password.
func (a *account) SecretKey() string { return a.user.Password }

// IsAdmin implements access.Account: a Super user.
func (a *account) IsAdmin() bool { return a.user.Type == TypeSuper }

// FromAllowed implements access.Account. An ACL 2.0 user has no address
// restriction of its own: source addresses are conditions of its entries
// (Allows).
func (a *account) FromAllowed(netip.Addr) bool { return true }

// Allows implements access.Account. A Super user may do everything. For the
// others each action the need names is decided on its own (ANY: Pub or
// Sub, as access.Perm.Grants): the entries of every policy that match the
// resource (an Any resource, the type with the name literally, by prefix,
// or any name), hold the action (or All) and apply from ip (no source
// addresses, or one that holds ip) are the matches; any Deny among them
// refuses the action, whatever the specificity (deny overrides allow,
// always); else an Allow grants it; no match refuses (default deny). The
// need is met when one of its actions is granted. An ip that is not valid
// matches no entry with source addresses that allows, and every one that
// denies. The rule named is the most specific deciding entry (literal,
// then the longer prefix, then any name, then *).
func (a *account) Allows(n access.Need, ip netip.Addr) (bool, string) {
	if a.IsAdmin() {
		return true, "User:" + a.user.Name + " is a Super user"
	}
	if n.Perm&access.PermDeny != 0 {
		return false, "DENY asked"
	}
	var wants []Actions
	if n.Perm&(access.PermAny|access.PermPub) != 0 {
		wants = append(wants, ActPub)
	}
	if n.Perm&(access.PermAny|access.PermSub) != 0 {
		wants = append(wants, ActSub)
	}
	var denied *matched
	for _, want := range wants {
		allow, deny := a.decide(n, ip, want)
		if deny != nil {
			if denied == nil || deny.rank > denied.rank {
				denied = deny
			}
			continue
		}
		if allow != nil {
			return true, allow.rule(a.user.Name, "allowed by")
		}
	}
	if denied != nil {
		return false, denied.rule(a.user.Name, "the decision is deny:")
	}
	if len(a.acl.Policies) == 0 {
		return false, "User:" + a.user.Name + " has no ACL, no matched policies"
	}
	return false, "no matched policies of User:" + a.user.Name
}

// matched is an entry that matched a request, with its policy type and
// how specific its resource is.
type matched struct {
	policy string
	entry  Entry
	rank   int
}

func (m *matched) rule(user, how string) string {
	from := ""
	if len(m.entry.Sources) > 0 {
		texts := make([]string, len(m.entry.Sources))
		for i, p := range m.entry.Sources {
			texts[i] = sourceText(p)
		}
		from = " from " + strings.Join(texts, ",")
	}
	return fmt.Sprintf("%s %s policy of User:%s: %s %s%s %s", how, m.policy, user, m.entry.Resource.Key(),
		strings.Join(m.entry.Actions.Names(), ","), from, m.entry.Decision())
}

// decide finds the most specific allowing and denying entries for one
// action.
func (a *account) decide(n access.Need, ip netip.Addr, want Actions) (allow, deny *matched) {
	for _, p := range a.acl.Policies {
		for _, e := range p.Entries {
			rank, ok := e.Resource.match(n)
			if !ok || !e.Actions.grants(want) || !e.appliesFrom(ip) {
				continue
			}
			m := &matched{policy: p.Type, entry: e, rank: rank}
			if e.Deny {
				if deny == nil || rank > deny.rank {
					deny = m
				}
			} else if allow == nil || rank > allow.rank {
				allow = m
			}
		}
	}
	return allow, deny
}

// appliesFrom reports whether the entry applies to a request from ip. An
// invalid ip (the address is unknown) fails closed: a Deny with sources
// applies, an Allow with sources does not.
func (e Entry) appliesFrom(ip netip.Addr) bool {
	if len(e.Sources) == 0 {
		return true
	}
	if !ip.IsValid() {
		return e.Deny
	}
	ip = ip.Unmap()
	for _, p := range e.Sources {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Ranks of resource specificity (higher is more specific): a prefix ranks
// by its length, a literal above every prefix.
const (
	rankAnyResource = 0
	rankAnyName     = 1
	rankPrefix      = 2
	rankLiteral     = 1 << 20
)

// match reports whether the resource covers n's resource, and how
// specifically.
func (r Resource) match(n access.Need) (int, bool) {
	if r.Type == ResourceAny {
		return rankAnyResource, true
	}
	if (r.Type == ResourceTopic) != (n.Kind == access.KindTopic) || (r.Type == ResourceGroup) != (n.Kind == access.KindGroup) {
		return 0, false
	}
	switch r.Pattern {
	case PatternAny:
		return rankAnyName, true
	case PatternPrefixed:
		return rankPrefix + len(r.Name), strings.HasPrefix(n.Name, r.Name)
	case PatternLiteral:
		return rankLiteral, n.Name == r.Name
	}
	return 0, false
}
