package acl

// The model: policies, their entries and ACLs, parsed from RocketMQ's
// AclInfo and merged as RocketMQ merges them. Every check's error is an
// Invalid whose text is the answer's remark.

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// Policy types (RocketMQ PolicyType).
const (
	PolicyCustom  = "Custom"
	PolicyDefault = "Default"
)

// ParsePolicyType reads a policy type (case-insensitive); "" is Custom, as
// RocketMQ fills it in.
func ParsePolicyType(s string) (string, error) {
	switch {
	case s == "", strings.EqualFold(s, PolicyCustom):
		return PolicyCustom, nil
	case strings.EqualFold(s, PolicyDefault):
		return PolicyDefault, nil
	}
	return "", invalidf("The policyType %q is unknown: Custom or Default", s)
}

// Entry is one rule of a policy.
type Entry struct {
	Resource Resource
	Actions  Actions
	// Sources are the networks the entry applies from (none: everywhere).
	Sources []netip.Prefix
	Deny    bool // the decision: Deny, else Allow
}

// Decision is the entry's decision as RocketMQ names it.
func (e Entry) Decision() string {
	if e.Deny {
		return "Deny"
	}
	return "Allow"
}

// info is the entry as AclInfo carries it.
func (e Entry) info() adminbody.PolicyEntryInfo {
	var ips []string
	for _, p := range e.Sources {
		ips = append(ips, sourceText(p))
	}
	return adminbody.PolicyEntryInfo{Resource: e.Resource.Key(), Actions: e.Actions.Names(), SourceIps: ips,
		Decision: e.Decision()}
}

// parseEntry checks one entry of a request.
func parseEntry(in adminbody.PolicyEntryInfo) (Entry, error) {
	var e Entry
	var err error
	if e.Resource, err = ParseResource(in.Resource); err != nil {
		return Entry{}, err
	}
	if e.Actions, err = ParseActions(in.Actions); err != nil {
		return Entry{}, err
	}
	if len(in.SourceIps) > MaxSourceIPs {
		return Entry{}, invalidf("The entry of %s has more than %d source ips", in.Resource, MaxSourceIPs)
	}
	for _, s := range in.SourceIps {
		p, err := parseSourceIP(s)
		if err != nil {
			return Entry{}, err
		}
		if !slices.Contains(e.Sources, p) {
			e.Sources = append(e.Sources, p)
		}
	}
	switch {
	case strings.EqualFold(in.Decision, "Allow"):
	case strings.EqualFold(in.Decision, "Deny"):
		e.Deny = true
	default:
		return Entry{}, Invalid("The decision is null or illegal.")
	}
	return e, nil
}

// Policy is the entries of one policy type.
type Policy struct {
	Type    string // PolicyCustom or PolicyDefault
	Entries []Entry
}

// ACL is one user's policies: at most one policy of each type, no two
// entries of a policy on the same resource.
type ACL struct {
	User     string
	Policies []Policy
}

// Info is the ACL as AUTH_GET_ACL and AUTH_LIST_ACL answer it.
func (a ACL) Info() adminbody.AclInfo {
	out := adminbody.AclInfo{Subject: Subject(a.User)}
	for _, p := range a.Policies {
		pi := adminbody.PolicyInfo{PolicyType: p.Type}
		for _, e := range p.Entries {
			pi.Entries = append(pi.Entries, e.info())
		}
		out.Policies = append(out.Policies, pi)
	}
	return out
}

// entries counts the entries of every policy.
func (a ACL) entries() int {
	n := 0
	for _, p := range a.Policies {
		n += len(p.Entries)
	}
	return n
}

// clone copies the policies (entries are values; their Sources are never
// modified in place).
func (a ACL) clone() ACL {
	out := ACL{User: a.User, Policies: make([]Policy, len(a.Policies))}
	for i, p := range a.Policies {
		out.Policies[i] = Policy{Type: p.Type, Entries: slices.Clone(p.Entries)}
	}
	return out
}

// ParseACL checks an AUTH_CREATE_ACL or AUTH_UPDATE_ACL request: the
// subject from the header, or from the body when the header has none (the
// two must agree), then every policy. Policies without entries are
// skipped, as RocketMQ's AclConverter does; two policies of one type, or
// two entries on one resource, merge (the later wins).
func ParseACL(headerSubject string, info adminbody.AclInfo) (ACL, error) {
	subject := headerSubject
	switch {
	case subject == "":
		subject = info.Subject
	case info.Subject != "" && info.Subject != headerSubject:
		return ACL{}, invalidf("The subject of the body (%q) is not the header's (%q)", info.Subject, headerSubject)
	}
	name, err := ParseSubject(subject)
	if err != nil {
		return ACL{}, err
	}
	out := ACL{User: name}
	for _, pi := range info.Policies {
		if len(pi.Entries) == 0 {
			continue
		}
		typ, err := ParsePolicyType(pi.PolicyType)
		if err != nil {
			return ACL{}, err
		}
		if len(pi.Entries) > MaxEntries {
			return ACL{}, invalidf("The ACL of %s has more than %d entries", subject, MaxEntries)
		}
		p := Policy{Type: typ}
		for _, ei := range pi.Entries {
			e, err := parseEntry(ei)
			if err != nil {
				return ACL{}, err
			}
			p.Entries = append(p.Entries, e)
		}
		out = out.merge([]Policy{p})
	}
	if len(out.Policies) == 0 {
		return ACL{}, Invalid("The policies is empty.")
	}
	if out.entries() > MaxEntries {
		return ACL{}, invalidf("The ACL of %s has more than %d entries", subject, MaxEntries)
	}
	return out, nil
}

// merge returns a with the policies added, as RocketMQ's
// Acl.updatePolicy: a policy of a new type is added; an entry on a
// resource the policy has replaces that entry's actions, sources and
// decision; other entries are added. a is not modified.
func (a ACL) merge(policies []Policy) ACL {
	out := a.clone()
	for _, np := range policies {
		i := slices.IndexFunc(out.Policies, func(p Policy) bool { return p.Type == np.Type })
		if i < 0 {
			out.Policies = append(out.Policies, Policy{Type: np.Type})
			i = len(out.Policies) - 1
		}
		p := &out.Policies[i]
		for _, ne := range np.Entries {
			if j := slices.IndexFunc(p.Entries, func(e Entry) bool { return e.Resource == ne.Resource }); j >= 0 {
				p.Entries[j] = ne
			} else {
				p.Entries = append(p.Entries, ne)
			}
		}
	}
	// Custom first: the order decisions name rules in.
	slices.SortStableFunc(out.Policies, func(x, y Policy) int {
		return boolInt(x.Type != PolicyCustom) - boolInt(y.Type != PolicyCustom)
	})
	return out
}

// without returns a without the entry on r of policy type typ (and
// without the policy when it is left empty), and whether there was one.
func (a ACL) without(typ string, r Resource) (ACL, bool) {
	out := a.clone()
	i := slices.IndexFunc(out.Policies, func(p Policy) bool { return p.Type == typ })
	if i < 0 {
		return out, false
	}
	p := &out.Policies[i]
	j := slices.IndexFunc(p.Entries, func(e Entry) bool { return e.Resource == r })
	if j < 0 {
		return out, false
	}
	p.Entries = slices.Delete(p.Entries, j, j+1)
	if len(p.Entries) == 0 {
		out.Policies = slices.Delete(out.Policies, i, i+1)
	}
	return out, true
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
