package acl

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/storage/adminbody"
)

func TestNewUserRules(t *testing.T) {
	tests := []struct {
		name string
		info adminbody.UserInfo
		want User
		bad  string // a part of the remark
	}{
		{"alice", adminbody.UserInfo{Password: "12345678"}, User{"alice", "12345678", TypeNormal, StatusEnable}, ""},
		{"ops.admin@x-1_y", adminbody.UserInfo{Password: "p!#$%&'()*+,-./:;<=>?@[]^_`{|}~", UserType: "super", UserStatus: "DISABLE"},
			User{"ops.admin@x-1_y", "p!#$%&'()*+,-./:;<=>?@[]^_`{|}~", TypeSuper, StatusDisable}, ""},
		{"", adminbody.UserInfo{Password: "12345678"}, User{}, "The username is blank"},
		{"  ", adminbody.UserInfo{Password: "12345678"}, User{}, "The username is blank"},
		{strings.Repeat("a", MaxUsernameLen+1), adminbody.UserInfo{Password: "12345678"}, User{}, "longer than 64"},
		{"a:b", adminbody.UserInfo{Password: "12345678"}, User{}, "has a character other than"},
		{"a,b", adminbody.UserInfo{Password: "12345678"}, User{}, "has a character other than"},
		{"alice", adminbody.UserInfo{}, User{}, "The password is blank"},
		{"alice", adminbody.UserInfo{Password: "1234567"}, User{}, "shorter than 8"},
		{"alice", adminbody.UserInfo{Password: strings.Repeat("x", MaxPasswordLen+1)}, User{}, "longer than 128"},
		{"alice", adminbody.UserInfo{Password: "with space"}, User{}, "printable ASCII"},
		{"alice", adminbody.UserInfo{Password: "pässwörd1"}, User{}, "printable ASCII"},
		{"alice", adminbody.UserInfo{Password: "12345678", UserType: "Admin"}, User{}, `userType "Admin" is unknown`},
		{"alice", adminbody.UserInfo{Password: "12345678", UserStatus: "on"}, User{}, `userStatus "on" is unknown`},
	}
	for _, tt := range tests {
		u, err := NewUser(tt.name, tt.info)
		if tt.bad == "" {
			if err != nil || u != tt.want {
				t.Errorf("%q %+v: %+v, %v", tt.name, tt.info, u, err)
			}
			continue
		}
		remark, ok := IsInvalid(err)
		if !ok || !strings.Contains(remark, tt.bad) {
			t.Errorf("%q: error %v, want Invalid with %q", tt.name, err, tt.bad)
		}
		if tt.info.Password != "" && strings.Contains(remark, tt.info.Password) {
			t.Errorf("remark %q shows the password", remark)
		}
	}
	if _, err := NewChange("alice", adminbody.UserInfo{}); err == nil {
		t.Error("an update that changes nothing was accepted")
	}
	if c, err := NewChange("alice", adminbody.UserInfo{UserStatus: "disable"}); err != nil || c.Password != "" || c.Status != StatusDisable {
		t.Errorf("status-only change %+v %v", c, err)
	}
}

func TestParseResource(t *testing.T) {
	tests := []struct {
		key  string
		want Resource
		bad  string
	}{
		{"*", Resource{ResourceAny, "", PatternAny}, ""},
		{"Any:*", Resource{ResourceAny, "", PatternAny}, ""},
		{"Topic:orders", Resource{ResourceTopic, "orders", PatternLiteral}, ""},
		{"topic:orders", Resource{ResourceTopic, "orders", PatternLiteral}, ""},
		{"Topic:ord*", Resource{ResourceTopic, "ord", PatternPrefixed}, ""},
		{"Topic:*", Resource{ResourceTopic, "", PatternAny}, ""},
		{"Group:%RETRY%g", Resource{ResourceGroup, "%RETRY%g", PatternLiteral}, ""},
		{"GROUP:bill*", Resource{ResourceGroup, "bill", PatternPrefixed}, ""},
		{"", Resource{}, "blank"},
		{"orders", Resource{}, "is not Topic:<name>"},
		{"Topic:", Resource{}, "the name is empty"},
		{"Topic:a*b", Resource{}, "illegal character"},
		{"Topic:a**", Resource{}, "the prefix has"},
		{"Topic:a b", Resource{}, "illegal character"},
		{"Topic:" + strings.Repeat("t", 128), Resource{}, "longer than 127"},
		{"Any:x", Resource{}, "is not Any:*"},
		{"Cluster:DefaultCluster", Resource{}, "no Cluster resources"},
		{"Namespace:ns", Resource{}, "no Namespace resources"},
		{"Queue:q", Resource{}, `type "Queue" is unknown`},
	}
	for _, tt := range tests {
		r, err := ParseResource(tt.key)
		if tt.bad == "" {
			if err != nil || r != tt.want {
				t.Errorf("%q: %+v, %v", tt.key, r, err)
			}
			continue
		}
		if remark, ok := IsInvalid(err); !ok || !strings.Contains(remark, tt.bad) {
			t.Errorf("%q: %v, want Invalid with %q", tt.key, err, tt.bad)
		}
	}
	for _, key := range []string{"*", "Topic:orders", "Topic:ord*", "Topic:*", "Group:g", "Group:g*", "Group:*"} {
		r, err := ParseResource(key)
		if err != nil || r.Key() != key {
			t.Errorf("%q comes back as %q (%v)", key, r.Key(), err)
		}
	}
}

func TestParseACL(t *testing.T) {
	entry := func(res string, actions []string, ips []string, decision string) adminbody.PolicyEntryInfo {
		return adminbody.PolicyEntryInfo{Resource: res, Actions: actions, SourceIps: ips, Decision: decision}
	}
	ok := entry("Topic:t", []string{"Pub"}, nil, "Allow")
	bad := []struct {
		subject string
		info    adminbody.AclInfo
		remark  string
	}{
		{"", adminbody.AclInfo{Policies: []adminbody.PolicyInfo{{Entries: []adminbody.PolicyEntryInfo{ok}}}}, "The subject is blank"},
		{"alice", adminbody.AclInfo{Policies: []adminbody.PolicyInfo{{Entries: []adminbody.PolicyEntryInfo{ok}}}}, "is not User:<username>"},
		{"Role:x", adminbody.AclInfo{Policies: []adminbody.PolicyInfo{{Entries: []adminbody.PolicyEntryInfo{ok}}}}, "is not User:<username>"},
		{"User:a", adminbody.AclInfo{Subject: "User:b", Policies: []adminbody.PolicyInfo{{Entries: []adminbody.PolicyEntryInfo{ok}}}}, "is not the header's"},
		{"User:a", adminbody.AclInfo{}, "The policies is empty."},
		{"User:a", adminbody.AclInfo{Policies: []adminbody.PolicyInfo{{}}}, "The policies is empty."},
		{"User:a", adminbody.AclInfo{Policies: []adminbody.PolicyInfo{{PolicyType: "Mine", Entries: []adminbody.PolicyEntryInfo{ok}}}}, `policyType "Mine"`},
		{"User:a", one(entry("Topic:t", nil, nil, "Allow")), "The actions is empty."},
		{"User:a", one(entry("Topic:t", []string{"Any"}, nil, "Allow")), "The actions can not be Any."},
		{"User:a", one(entry("Topic:t", []string{"Publish"}, nil, "Allow")), `action "Publish" is unknown`},
		{"User:a", one(entry("Topic:t", []string{"Pub"}, []string{""}, "Allow")), "The source ip is empty."},
		{"User:a", one(entry("Topic:t", []string{"Pub"}, []string{"10.0.0.*"}, "Allow")), "not an address or a CIDR"},
		{"User:a", one(entry("Topic:t", []string{"Pub"}, []string{"10.0.0.0/33"}, "Allow")), "not an address or a CIDR"},
		{"User:a", one(entry("Topic:t", []string{"Pub"}, []string{"fe80::1%eth0"}, "Allow")), "not an address or a CIDR"},
		{"User:a", one(entry("Topic:t", []string{"Pub"}, nil, "")), "The decision is null or illegal."},
		{"User:a", one(entry("Topic:t", []string{"Pub"}, nil, "Maybe")), "The decision is null or illegal."},
		{"User:a", one(entry("Cluster:c", []string{"Update"}, nil, "Allow")), "no Cluster resources"},
	}
	for _, tt := range bad {
		_, err := ParseACL(tt.subject, tt.info)
		if remark, ok := IsInvalid(err); !ok || !strings.Contains(remark, tt.remark) {
			t.Errorf("%q %+v: %v, want Invalid with %q", tt.subject, tt.info, err, tt.remark)
		}
	}

	// Duplicates merge (the later wins), Default policies sort after
	// Custom, addresses are written canonically, actions in RocketMQ's order.
	a, err := ParseACL("", adminbody.AclInfo{Subject: "user:alice", Policies: []adminbody.PolicyInfo{
		{PolicyType: "default", Entries: []adminbody.PolicyEntryInfo{entry("*", []string{"sub"}, nil, "allow")}},
		{Entries: []adminbody.PolicyEntryInfo{
			entry("Topic:t", []string{"Pub"}, nil, "Allow"),
			entry("Topic:t", []string{"Sub", "Pub", "sub"}, []string{"10.1.2.3/8", "::ffff:192.168.0.9", "10.0.0.0/8"}, "Deny"),
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := adminbody.AclInfo{Subject: "User:alice", Policies: []adminbody.PolicyInfo{
		{PolicyType: "Custom", Entries: []adminbody.PolicyEntryInfo{
			{Resource: "Topic:t", Actions: []string{"Pub", "Sub"}, SourceIps: []string{"10.0.0.0/8", "192.168.0.9"}, Decision: "Deny"}}},
		{PolicyType: "Default", Entries: []adminbody.PolicyEntryInfo{{Resource: "*", Actions: []string{"Sub"}, Decision: "Allow"}}},
	}}
	if got := a.Info(); !reflect.DeepEqual(got, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", got, want)
	}
}

func one(e adminbody.PolicyEntryInfo) adminbody.AclInfo {
	return adminbody.AclInfo{Policies: []adminbody.PolicyInfo{{Entries: []adminbody.PolicyEntryInfo{e}}}}
}

func TestMergeAndWithout(t *testing.T) {
	base, err := ParseACL("User:a", adminbody.AclInfo{Policies: []adminbody.PolicyInfo{{Entries: []adminbody.PolicyEntryInfo{
		{Resource: "Topic:t", Actions: []string{"Pub"}, Decision: "Allow"},
		{Resource: "Group:g", Actions: []string{"Sub"}, Decision: "Allow"},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	add, _ := ParseACL("User:a", adminbody.AclInfo{Policies: []adminbody.PolicyInfo{{Entries: []adminbody.PolicyEntryInfo{
		{Resource: "Topic:t", Actions: []string{"Sub"}, Decision: "Deny"},
		{Resource: "Topic:u*", Actions: []string{"All"}, Decision: "Allow"},
	}}}})
	merged := base.merge(add.Policies)
	got := merged.Info().Policies[0].Entries
	if len(got) != 3 || got[0].Decision != "Deny" || got[0].Actions[0] != "Sub" || got[2].Resource != "Topic:u*" {
		t.Fatalf("merged %+v", got)
	}
	if len(base.Info().Policies[0].Entries) != 2 || base.Policies[0].Entries[0].Deny {
		t.Fatal("merge modified its receiver")
	}
	r, _ := ParseResource("Group:g")
	rest, found := merged.without(PolicyCustom, r)
	if !found || rest.entries() != 2 || merged.entries() != 3 {
		t.Fatalf("without: %v %d %d", found, rest.entries(), merged.entries())
	}
	if _, found := merged.without(PolicyDefault, r); found {
		t.Fatal("an entry of the Custom policy deleted as Default")
	}
	for _, e := range rest.Policies[0].Entries {
		rest, _ = rest.without(PolicyCustom, e.Resource)
	}
	if len(rest.Policies) != 0 {
		t.Fatalf("emptied policy kept: %+v", rest)
	}
}
