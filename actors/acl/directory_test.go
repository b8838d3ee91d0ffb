package acl

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// snapshotOf builds a snapshot of users (name -> type/status) and entries
// of alice's Custom policy (and, with "default:" before the resource, of
// her Default policy).
func snapshotOf(t *testing.T, entries ...adminbody.PolicyEntryInfo) *Snapshot {
	t.Helper()
	users := map[string]User{
		"alice": {"alice", "alice-secret", TypeNormal, StatusEnable},
		"root":  {"root", "root-secret", TypeSuper, StatusEnable},
		"gone":  {"gone", "gone-secret", TypeSuper, StatusDisable},
		"bare":  {"bare", "bare-secret", TypeNormal, StatusEnable},
	}
	var custom, def []adminbody.PolicyEntryInfo
	for _, e := range entries {
		if r, ok := strings.CutPrefix(e.Resource, "default:"); ok {
			e.Resource = r
			def = append(def, e)
		} else {
			custom = append(custom, e)
		}
	}
	info := adminbody.AclInfo{Subject: "User:alice"}
	if len(custom) > 0 {
		info.Policies = append(info.Policies, adminbody.PolicyInfo{Entries: custom})
	}
	if len(def) > 0 {
		info.Policies = append(info.Policies, adminbody.PolicyInfo{PolicyType: "Default", Entries: def})
	}
	acls := map[string]ACL{}
	if len(entries) > 0 {
		a, err := ParseACL("", info)
		if err != nil {
			t.Fatal(err)
		}
		acls["alice"] = a
	}
	return newSnapshot(users, acls)
}

func e(res, actions, decision string, ips ...string) adminbody.PolicyEntryInfo {
	return adminbody.PolicyEntryInfo{Resource: res, Actions: strings.Split(actions, ","), Decision: decision, SourceIps: ips}
}

func topic(name string, p auth.Perm) auth.Need {
	return auth.Need{Kind: auth.KindTopic, Name: name, Perm: p}
}
func group(name string, p auth.Perm) auth.Need {
	return auth.Need{Kind: auth.KindGroup, Name: name, Perm: p}
}

var (
	inside  = netip.MustParseAddr("10.1.2.3")
	outside = netip.MustParseAddr("192.168.7.7")
)

func TestAllows(t *testing.T) {
	tests := []struct {
		name    string
		entries []adminbody.PolicyEntryInfo
		need    auth.Need
		ip      netip.Addr
		ok      bool
		rule    string // a part of the rule named
	}{
		{"no ACL: default deny", nil, topic("t", auth.PermPub), inside, false, "has no ACL"},
		{"literal allow", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow")}, topic("t", auth.PermPub), inside, true, "Topic:t Pub Allow"},
		{"literal is exact", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow")}, topic("tt", auth.PermPub), inside, false, "no matched policies"},
		{"other action", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow")}, topic("t", auth.PermSub), inside, false, "no matched"},
		{"All covers Sub", []adminbody.PolicyEntryInfo{e("Topic:t", "All", "Allow")}, topic("t", auth.PermSub), inside, true, "All Allow"},
		{"Get grants no Sub", []adminbody.PolicyEntryInfo{e("Topic:t", "Get,List,Create,Update,Delete", "Allow")}, topic("t", auth.PermSub), inside, false, "no matched"},
		{"prefix", []adminbody.PolicyEntryInfo{e("Topic:ord*", "Pub", "Allow")}, topic("orders", auth.PermPub), inside, true, "Topic:ord*"},
		{"prefix misses", []adminbody.PolicyEntryInfo{e("Topic:ord*", "Pub", "Allow")}, topic("bill", auth.PermPub), inside, false, "no matched"},
		{"type any", []adminbody.PolicyEntryInfo{e("Topic:*", "Pub", "Allow")}, topic("x", auth.PermPub), inside, true, "Topic:*"},
		{"type any is not groups", []adminbody.PolicyEntryInfo{e("Topic:*", "Sub", "Allow")}, group("x", auth.PermSub), inside, false, "no matched"},
		{"star is everything", []adminbody.PolicyEntryInfo{e("*", "Sub", "Allow")}, group("g", auth.PermSub), inside, true, "policy of User:alice: * Sub Allow"},
		{"group literal", []adminbody.PolicyEntryInfo{e("Group:g", "Sub", "Allow")}, group("g", auth.PermSub), inside, true, "Group:g"},
		{"group is not topic", []adminbody.PolicyEntryInfo{e("Group:g", "Sub", "Allow")}, topic("g", auth.PermSub), inside, false, "no matched"},
		// Deny overrides allow, always: whatever is more specific.
		{"deny literal over allow any", []adminbody.PolicyEntryInfo{e("Topic:*", "Pub", "Allow"), e("Topic:secret", "Pub", "Deny")},
			topic("secret", auth.PermPub), inside, false, "the decision is deny: Custom policy of User:alice: Topic:secret Pub Deny"},
		{"deny any over allow literal", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow"), e("*", "All", "Deny")},
			topic("t", auth.PermPub), inside, false, "* All Deny"},
		{"deny prefix over allow literal", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow"), e("Topic:t*", "Pub", "Deny")},
			topic("t", auth.PermPub), inside, false, "Topic:t* Pub Deny"},
		{"deny names most specific", []adminbody.PolicyEntryInfo{e("*", "All", "Deny"), e("Topic:or*", "Pub", "Deny"), e("Topic:ord*", "Pub", "Deny"), e("Topic:o*", "Pub", "Deny")},
			topic("orders", auth.PermPub), inside, false, "Topic:ord* Pub Deny"},
		{"allow names most specific", []adminbody.PolicyEntryInfo{e("*", "All", "Allow"), e("Topic:orders", "Pub", "Allow"), e("Topic:ord*", "Pub", "Allow")},
			topic("orders", auth.PermPub), inside, true, "Topic:orders Pub Allow"},
		{"deny of another action", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow"), e("Topic:t", "Sub", "Deny")},
			topic("t", auth.PermPub), inside, false, "no matched"}, // same resource: the later entry replaced the earlier one
		{"deny Sub leaves Pub", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow"), e("Topic:*", "Sub", "Deny")},
			topic("t", auth.PermPub), inside, true, "Topic:t Pub Allow"},
		{"default policy counts", []adminbody.PolicyEntryInfo{e("default:Topic:t", "Pub", "Allow")}, topic("t", auth.PermPub), inside, true, "Default policy"},
		{"default deny beats custom allow", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow"), e("default:*", "All", "Deny")},
			topic("t", auth.PermPub), inside, false, "Default policy of User:alice: * All Deny"},
		// ANY: Pub or Sub is enough.
		{"any by sub", []adminbody.PolicyEntryInfo{e("Topic:t", "Sub", "Allow")}, topic("t", auth.PermAny), inside, true, "Sub Allow"},
		{"any by pub with sub denied", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow"), e("*", "Sub", "Deny")},
			topic("t", auth.PermAny), inside, true, "Pub Allow"},
		{"any all denied", []adminbody.PolicyEntryInfo{e("Topic:t", "All", "Deny")}, topic("t", auth.PermAny), inside, false, "the decision is deny"},
		{"pub or sub need", []adminbody.PolicyEntryInfo{e("Topic:t", "Sub", "Allow")}, topic("t", auth.PermPub|auth.PermSub), inside, true, "Sub Allow"},
		{"deny bit never granted", []adminbody.PolicyEntryInfo{e("*", "All", "Allow")}, topic("t", auth.PermDeny|auth.PermPub), inside, false, "DENY"},
		// Source addresses are conditions.
		{"allow from inside", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow", "10.0.0.0/8")}, topic("t", auth.PermPub), inside, true, "from 10.0.0.0/8 Allow"},
		{"allow not from outside", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow", "10.0.0.0/8")}, topic("t", auth.PermPub), outside, false, "no matched"},
		{"plain ip", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow", "192.168.7.7")}, topic("t", auth.PermPub), outside, true, "from 192.168.7.7"},
		{"mapped ip", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow", "10.0.0.0/8")}, topic("t", auth.PermPub), netip.MustParseAddr("::ffff:10.9.9.9"), true, "Allow"},
		{"ipv6", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow", "2001:db8::/32")}, topic("t", auth.PermPub), netip.MustParseAddr("2001:db8::7"), true, "2001:db8::/32"},
		{"deny from outside only", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow"), e("Topic:*", "Pub", "Deny", "192.168.0.0/16")},
			topic("t", auth.PermPub), inside, true, "Allow"},
		{"deny from outside hits", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow"), e("Topic:*", "Pub", "Deny", "192.168.0.0/16")},
			topic("t", auth.PermPub), outside, false, "from 192.168.0.0/16 Deny"},
		{"unknown ip: conditional allow fails", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow", "10.0.0.0/8")}, topic("t", auth.PermPub), netip.Addr{}, false, "no matched"},
		{"unknown ip: conditional deny holds", []adminbody.PolicyEntryInfo{e("Topic:t", "Pub", "Allow"), e("*", "All", "Deny", "10.0.0.0/8")},
			topic("t", auth.PermPub), netip.Addr{}, false, "Deny"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshotOf(t, tt.entries...)
			a, found := s.Lookup("alice")
			if !found {
				t.Fatal("alice not found")
			}
			ok, rule := a.Allows(tt.need, tt.ip)
			if ok != tt.ok || !strings.Contains(rule, tt.rule) {
				t.Fatalf("Allows(%+v, %v) = %v %q; want %v with %q", tt.need, tt.ip, ok, rule, tt.ok, tt.rule)
			}
			if strings.Contains(rule, "-secret") {
				t.Fatalf("rule %q names a secret", rule)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	s := snapshotOf(t, e("*", "All", "Deny"))
	root, ok := s.Lookup("root")
	if !ok || !root.IsAdmin() || root.SecretKey() != "root-secret" || root.Name() != "root" {
		t.Fatalf("root: %v %+v", ok, root)
	}
	if ok, rule := root.Allows(topic("any", auth.PermPub), outside); !ok || !strings.Contains(rule, "Super") {
		t.Fatalf("a Super user refused: %q", rule)
	}
	if !root.FromAllowed(outside) || !root.FromAllowed(netip.Addr{}) {
		t.Fatal("an ACL 2.0 user restricted by address")
	}
	if _, ok := s.Lookup("gone"); ok {
		t.Fatal("a disabled user was found")
	}
	if _, ok := s.Lookup("nobody"); ok {
		t.Fatal("an unknown user was found")
	}
	if _, ok := s.Lookup(""); ok {
		t.Fatal("anonymous was found")
	}
	alice, _ := s.Lookup("alice")
	if alice.IsAdmin() {
		t.Fatal("a Normal user is admin")
	}
	if users, enabled := s.Len(); users != 4 || enabled != 3 {
		t.Fatalf("Len %d %d", users, enabled)
	}
	// The union with another directory asks this one like any other.
	if a, ok := (auth.Union{nil, s}).Lookup("alice"); !ok || a.Name() != "alice" {
		t.Fatal("union misses alice")
	}
}

func TestListFilters(t *testing.T) {
	s := snapshotOf(t, e("Topic:orders", "Pub", "Allow"), e("Group:billing", "Sub", "Allow"))
	names := func(us []User) (out []string) {
		for _, u := range us {
			out = append(out, u.Name)
		}
		return out
	}
	if got := strings.Join(names(s.Users("")), ","); got != "alice,bare,gone,root" {
		t.Fatalf("all users %s", got)
	}
	if got := strings.Join(names(s.Users("o")), ","); got != "gone,root" {
		t.Fatalf("users with o %s", got)
	}
	for _, u := range s.Users("") {
		if u.Info().Password != "" {
			t.Fatalf("Info of %s carries the password", u.Name)
		}
	}
	if got := s.ACLs("alice", ""); len(got) != 1 || got[0].entries() != 2 {
		t.Fatalf("acls of alice %+v", got)
	}
	if got := s.ACLs("", "Group:"); len(got) != 1 || got[0].entries() != 1 || got[0].Policies[0].Entries[0].Resource.Key() != "Group:billing" {
		t.Fatalf("acls on groups %+v", got)
	}
	if got := s.ACLs("bob", ""); len(got) != 0 {
		t.Fatalf("acls of bob %+v", got)
	}
	if got := s.ACLs("", "Topic:nothing"); len(got) != 0 {
		t.Fatalf("acls on a missing topic %+v", got)
	}
}
