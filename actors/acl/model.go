package acl

// The model: users, ACLs, policies, entries, resources, actions, source
// addresses and decisions, parsed from RocketMQ's wire bodies and checked.
// Every check's error is an Invalid whose text is the answer's remark; none
// ever holds a password.

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/wheelmq/wheelmq/netloop/remoting/adminbody"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// Invalid is a request (or a file record) that breaks a rule; its text is
// the remark of the INVALID_PARAMETER (29) answer.
type Invalid string

func (e Invalid) Error() string { return string(e) }

// Refused is a request RocketMQ refuses with NO_PERMISSION (16) and this
// remark (its AuthenticationException and AuthorizationException): the
// user exists already, the user or subject does not exist, the ACL does not
// exist.
type Refused string

func (e Refused) Error() string { return string(e) }

func invalidf(format string, args ...any) Invalid { return Invalid(fmt.Sprintf(format, args...)) }

// User types and statuses, as RocketMQ names them (UserType, UserStatus).
const (
	TypeSuper     = "Super"
	TypeNormal    = "Normal"
	StatusEnable  = "enable"
	StatusDisable = "disable"
)

// Limits of names, passwords and ACLs.
const (
	MaxUsernameLen = 64
	MinPasswordLen = 8
	MaxPasswordLen = 128
	// MaxEntries bounds one subject's entries, all policies together.
	MaxEntries = 1024
	// MaxSourceIPs bounds one entry's source addresses.
	MaxSourceIPs = 256
	// MaxUsers bounds the users of a broker.
	MaxUsers = 10000
)

// User is one ACL 2.0 user: the user name is the AccessKey its clients
// sign with, the password the SecretKey.
type User struct {
	Name     string
	Password string
	Type     string // TypeSuper or TypeNormal
	Status   string // StatusEnable or StatusDisable
}

// Info is the user as AUTH_GET_USER and AUTH_LIST_USER answer it: without
// the password, always.
func (u User) Info() adminbody.UserInfo {
	return adminbody.UserInfo{Username: u.Name, UserType: u.Type, UserStatus: u.Status}
}

// ValidateUsername checks a user name: 1 to MaxUsernameLen characters,
// letters, digits and _ - . @ only (no ':' or ',', which subjects and
// mqadmin's lists use as separators).
func ValidateUsername(name string) error {
	if strings.TrimSpace(name) == "" {
		return Invalid("The username is blank")
	}
	if len(name) > MaxUsernameLen {
		return invalidf("The username is longer than %d characters", MaxUsernameLen)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '-' || c == '.' || c == '@') {
			return invalidf("The username %q has a character other than letters, digits and _ - . @", name)
		}
	}
	return nil
}

// ValidatePassword checks a password without ever naming it: MinPasswordLen
// to MaxPasswordLen printable ASCII characters, no spaces.
func ValidatePassword(pw string) error {
	switch {
	case pw == "":
		return Invalid("The password is blank")
	case len(pw) < MinPasswordLen:
		return invalidf("The password is shorter than %d characters", MinPasswordLen)
	case len(pw) > MaxPasswordLen:
		return invalidf("The password is longer than %d characters", MaxPasswordLen)
	}
	for i := 0; i < len(pw); i++ {
		if pw[i] < 0x21 || pw[i] > 0x7e {
			return Invalid("The password may hold printable ASCII characters only, no spaces or control characters")
		}
	}
	return nil
}

// parseUserType reads a userType (case-insensitive); "" stays "".
func parseUserType(s string) (string, error) {
	switch {
	case s == "":
		return "", nil
	case strings.EqualFold(s, TypeSuper):
		return TypeSuper, nil
	case strings.EqualFold(s, TypeNormal):
		return TypeNormal, nil
	}
	return "", invalidf("The userType %q is unknown: Super or Normal", s)
}

// parseUserStatus reads a userStatus (case-insensitive); "" stays "".
func parseUserStatus(s string) (string, error) {
	switch {
	case s == "":
		return "", nil
	case strings.EqualFold(s, StatusEnable):
		return StatusEnable, nil
	case strings.EqualFold(s, StatusDisable):
		return StatusDisable, nil
	}
	return "", invalidf("The userStatus %q is unknown: enable or disable", s)
}

// NewUser is the user AUTH_CREATE_USER creates: name from the header (as
// RocketMQ takes it), the rest from the body; type Normal and status
// enable unless given.
func NewUser(name string, info adminbody.UserInfo) (User, error) {
	if err := ValidateUsername(name); err != nil {
		return User{}, err
	}
	if err := ValidatePassword(info.Password); err != nil {
		return User{}, err
	}
	typ, err := parseUserType(info.UserType)
	if err != nil {
		return User{}, err
	}
	status, err := parseUserStatus(info.UserStatus)
	if err != nil {
		return User{}, err
	}
	u := User{Name: name, Password: info.Password, Type: typ, Status: status}
	if u.Type == "" {
		u.Type = TypeNormal
	}
	if u.Status == "" {
		u.Status = StatusEnable
	}
	return u, nil
}

// Change is what AUTH_UPDATE_USER changes; empty fields stay as they are
// (RocketMQ's updateUser: a blank password is no change).
type Change struct {
	Name     string
	Password string
	Type     string
	Status   string
}

// NewChange checks an AUTH_UPDATE_USER request.
func NewChange(name string, info adminbody.UserInfo) (Change, error) {
	if err := ValidateUsername(name); err != nil {
		return Change{}, err
	}
	c := Change{Name: name}
	if info.Password != "" {
		if err := ValidatePassword(info.Password); err != nil {
			return Change{}, err
		}
		c.Password = info.Password
	}
	var err error
	if c.Type, err = parseUserType(info.UserType); err != nil {
		return Change{}, err
	}
	if c.Status, err = parseUserStatus(info.UserStatus); err != nil {
		return Change{}, err
	}
	if c.Password == "" && c.Type == "" && c.Status == "" {
		return Change{}, Invalid("Nothing to update: give a password, a userType or a userStatus")
	}
	return c, nil
}

// apply returns u with the change made.
func (c Change) apply(u User) User {
	if c.Password != "" {
		u.Password = c.Password
	}
	if c.Type != "" {
		u.Type = c.Type
	}
	if c.Status != "" {
		u.Status = c.Status
	}
	return u
}

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
