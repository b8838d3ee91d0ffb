package acl

// Subjects, resources, actions and source addresses of policy entries.

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/wheelmq/wheelmq/storage/meta"
)

// ParseSubject reads "User:<name>" (the type case-insensitive) and returns
// the user name.
func ParseSubject(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", Invalid("The subject is blank")
	}
	typ, name, ok := strings.Cut(s, ":")
	if !ok || !strings.EqualFold(typ, "User") {
		return "", invalidf("The subject %q is not User:<username>", s)
	}
	if err := ValidateUsername(name); err != nil {
		return "", err
	}
	return name, nil
}

// Subject is a user's subject key, "User:<name>".
func Subject(name string) string { return "User:" + name }

// ResourceType is what a resource names.
type ResourceType uint8

// The resource types wheelmq serves. RocketMQ's Cluster and Namespace are
// refused: a cluster-wide request needs a Super user.
const (
	ResourceAny ResourceType = iota + 1 // "*": every topic and group
	ResourceTopic
	ResourceGroup
)

// Pattern is how a resource's name matches.
type Pattern uint8

// The name patterns.
const (
	PatternLiteral  Pattern = iota + 1 // Topic:orders
	PatternPrefixed                    // Topic:orders* (the name is the prefix)
	PatternAny                         // Topic:*
)

// Resource is an entry's resource.
type Resource struct {
	Type    ResourceType
	Name    string // the literal name or the prefix; "" for PatternAny
	Pattern Pattern
}

// ParseResource reads "*", "Topic:name", "Topic:prefix*", "Topic:*" (and
// the same for Group; types case-insensitive, as RocketMQ's).
func ParseResource(key string) (Resource, error) {
	if strings.TrimSpace(key) == "" {
		return Resource{}, Invalid("The resource is blank")
	}
	if key == "*" {
		return Resource{Type: ResourceAny, Pattern: PatternAny}, nil
	}
	typ, name, ok := strings.Cut(key, ":")
	if !ok {
		return Resource{}, invalidf("The resource %q is not Topic:<name>, Topic:<prefix>*, Topic:*, the same with Group, or *", key)
	}
	var r Resource
	switch {
	case strings.EqualFold(typ, "Topic"):
		r.Type = ResourceTopic
	case strings.EqualFold(typ, "Group"):
		r.Type = ResourceGroup
	case strings.EqualFold(typ, "Any"):
		if name != "*" {
			return Resource{}, invalidf("The resource %q is not Any:* (or *)", key)
		}
		return Resource{Type: ResourceAny, Pattern: PatternAny}, nil
	case strings.EqualFold(typ, "Cluster"), strings.EqualFold(typ, "Namespace"):
		return Resource{}, invalidf("The resource %q is not supported: wheelmq has no %s resources; admin requests need a Super user", key, typ)
	default:
		return Resource{}, invalidf("The resource type %q is unknown: Topic, Group or *", typ)
	}
	switch {
	case name == "*":
		r.Pattern = PatternAny
		return r, nil
	case strings.HasSuffix(name, "*"):
		r.Pattern, r.Name = PatternPrefixed, strings.TrimSuffix(name, "*")
	default:
		r.Pattern, r.Name = PatternLiteral, name
	}
	if err := validResourceName(r); err != nil {
		return Resource{}, invalidf("The resource %q is invalid: %v", key, err)
	}
	return r, nil
}

// validResourceName checks a literal name or a prefix with RocketMQ's
// topic and group rules.
func validResourceName(r Resource) error {
	if r.Name == "" {
		return fmt.Errorf("the name is empty")
	}
	if r.Type == ResourceTopic && r.Pattern == PatternLiteral {
		return meta.ValidateTopic(r.Name)
	}
	if r.Type == ResourceGroup && r.Pattern == PatternLiteral {
		return meta.ValidateGroup(r.Name)
	}
	if len(r.Name) > meta.MaxRetryTopicLen {
		return fmt.Errorf("the prefix is longer than %d characters", meta.MaxRetryTopicLen)
	}
	for i := 0; i < len(r.Name); i++ {
		if c := r.Name[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '%' || c == '|' || c == '_' || c == '-') {
			return fmt.Errorf("the prefix has %q, allowing only ^[%%|a-zA-Z0-9_-]+ and a final *", c)
		}
	}
	return nil
}

// Key is the resource as RocketMQ writes it ("Topic:orders*", "*").
func (r Resource) Key() string {
	if r.Type == ResourceAny {
		return "*"
	}
	typ := "Topic"
	if r.Type == ResourceGroup {
		typ = "Group"
	}
	switch r.Pattern {
	case PatternAny:
		return typ + ":*"
	case PatternPrefixed:
		return typ + ":" + r.Name + "*"
	}
	return typ + ":" + r.Name
}

// Actions is a set of RocketMQ actions.
type Actions uint16

// The actions (RocketMQ's Action enum, without Unknown; Any is only ever
// asked for, never granted).
const (
	ActAll Actions = 1 << iota
	ActPub
	ActSub
	ActCreate
	ActUpdate
	ActDelete
	ActGet
	ActList
)

var actionNames = []struct {
	a    Actions
	name string
}{{ActAll, "All"}, {ActPub, "Pub"}, {ActSub, "Sub"}, {ActCreate, "Create"}, {ActUpdate, "Update"},
	{ActDelete, "Delete"}, {ActGet, "Get"}, {ActList, "List"}}

// ParseActions reads action names (case-insensitive).
func ParseActions(names []string) (Actions, error) {
	var set Actions
	for _, n := range names {
		if strings.EqualFold(n, "Any") {
			return 0, Invalid("The actions can not be Any.")
		}
		i := slices.IndexFunc(actionNames, func(a struct {
			a    Actions
			name string
		}) bool {
			return strings.EqualFold(a.name, n)
		})
		if i < 0 {
			return 0, invalidf("The action %q is unknown: All, Pub, Sub, Create, Update, Delete, Get or List", n)
		}
		set |= actionNames[i].a
	}
	if set == 0 {
		return 0, Invalid("The actions is empty.")
	}
	return set, nil
}

// Names lists the actions in RocketMQ's order.
func (s Actions) Names() []string {
	var out []string
	for _, a := range actionNames {
		if s&a.a != 0 {
			out = append(out, a.name)
		}
	}
	return out
}

// grants reports whether the set grants Pub or Sub (want is one of them):
// the action itself or All.
func (s Actions) grants(want Actions) bool { return s&(want|ActAll) != 0 }

// parseSourceIP reads an address or a CIDR prefix (IPv4 or IPv6, no zone),
// returned as the network it matches.
func parseSourceIP(s string) (netip.Prefix, error) {
	if strings.TrimSpace(s) == "" {
		return netip.Prefix{}, Invalid("The source ip is empty.")
	}
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return netip.Prefix{}, invalidf("The source ip %q is not an address or a CIDR prefix", s)
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, invalidf("The source ip %q is not an address or a CIDR prefix", s)
		}
		a = a.Unmap()
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return p.Masked(), nil
}

// sourceText writes a source network as given to the ACL: a bare address
// for a single host, else the CIDR form.
func sourceText(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}
