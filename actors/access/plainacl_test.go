package access

import (
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"
)

func loadTestACL(t *testing.T) *PlainACL {
	t.Helper()
	data, err := os.ReadFile("testdata/plain_acl.yml")
	if err != nil {
		t.Fatal(err)
	}
	acl, err := ParsePlainACL(data, "plain_acl.yml")
	if err != nil {
		t.Fatal(err)
	}
	return acl
}

func TestParsePlainACL(t *testing.T) {
	acl := loadTestACL(t)
	if acl.Len() != 2 {
		t.Fatalf("%d accounts", acl.Len())
	}
	alice, ok := acl.Lookup("alice-app")
	if !ok || alice.SecretKey() != "12345678901" || alice.IsAdmin() {
		t.Fatalf("alice = %+v", alice)
	}
	// Unquoted numbers are taken as written.
	root, ok := acl.Lookup("4711000")
	if !ok || root.SecretKey() != "0x1F2E3D4C" || !root.IsAdmin() {
		t.Fatalf("root = %+v %v", root, ok)
	}
	ip := netip.MustParseAddr("10.0.0.1")
	tests := []struct {
		need Need
		ok   bool
		rule string
	}{
		{Need{Kind: KindTopic, Name: "orders", Perm: PermPub}, true, "topicPerms orders=PUB"},
		{Need{Kind: KindTopic, Name: "orders", Perm: PermSub}, false, "topicPerms orders=PUB"},
		{Need{Kind: KindTopic, Name: "orders", Perm: PermAny}, true, "topicPerms orders=PUB"},
		{Need{Kind: KindTopic, Name: "audit", Perm: PermSub}, false, "topicPerms audit=PUB|SUB, audit=DENY"}, // deny overrides allow
		{Need{Kind: KindTopic, Name: "prices", Perm: PermSub}, true, "topicPerms prices=SUB"},
		{Need{Kind: KindTopic, Name: "other", Perm: PermSub}, false, "defaultTopicPerm=DENY"},
		{Need{Kind: KindGroup, Name: "billing", Perm: PermSub}, false, "groupPerms billing=DENY"},
		{Need{Kind: KindGroup, Name: "shipping", Perm: PermSub}, true, "groupPerms shipping=PUB|SUB"},
		{Need{Kind: KindGroup, Name: "any", Perm: PermSub}, true, "defaultGroupPerm=SUB"},
	}
	for _, tt := range tests {
		ok, rule := alice.Allows(tt.need, ip)
		if ok != tt.ok || rule != tt.rule {
			t.Errorf("%+v: %v %q, want %v %q", tt.need, ok, rule, tt.ok, tt.rule)
		}
	}
	if !alice.FromAllowed(ip) {
		t.Error("a blank whiteRemoteAddress restricts")
	}
	if root.FromAllowed(ip) || !root.FromAllowed(netip.MustParseAddr("192.168.1.9")) {
		t.Error("whiteRemoteAddress does not restrict")
	}
	if !acl.GlobalBypass(netip.MustParseAddr("10.10.103.5")) || acl.GlobalBypass(ip) {
		t.Error("globalWhiteRemoteAddresses")
	}
	if len(acl.Warnings) == 0 || !strings.Contains(acl.Warnings[0], "--acl-ip-bypass") {
		t.Errorf("warnings %q", acl.Warnings)
	}
}

func TestParsePlainACLErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"syntax", "accounts: [", "plain_acl.yml:"},
		{"unknown top key", "acounts: []", "plain_acl.yml:1: unknown key \"acounts\""},
		{"unknown account key", "accounts:\n  - accessKey: alice-app\n    secretKey: 12345678\n    whiteRemoteAddres: 1.2.3.4\n",
			"plain_acl.yml:4: account alice-app: unknown key \"whiteRemoteAddres\""},
		{"short key", "accounts:\n  - accessKey: bob\n    secretKey: 12345678\n", "plain_acl.yml:2: account bob: accessKey must be 7"},
		{"no secret", "accounts:\n  - accessKey: bobbobbob\n", "secretKey is missing"},
		{"no key", "accounts:\n  - secretKey: 12345678\n", "accessKey is missing"},
		{"bad perm", "accounts:\n  - accessKey: bobbobbob\n    secretKey: 12345678\n    defaultTopicPerm: ALL\n",
			"plain_acl.yml:4: account bobbobbob: defaultTopicPerm: unknown permission \"ALL\""},
		{"bad entry", "accounts:\n  - accessKey: bobbobbob\n    secretKey: 12345678\n    topicPerms: [orders]\n", "want name=PERM"},
		{"bad name", "accounts:\n  - accessKey: bobbobbob\n    secretKey: 12345678\n    topicPerms: [\"a/b=PUB\"]\n", "not a valid name"},
		{"bad address", "accounts:\n  - accessKey: bobbobbob\n    secretKey: 12345678\n    whiteRemoteAddress: 10.*.0.1\n",
			"plain_acl.yml:4: account bobbobbob: whiteRemoteAddress"},
		{"bad admin", "accounts:\n  - accessKey: bobbobbob\n    secretKey: 12345678\n    admin: yes please\n", "admin: want true or false"},
		{"dup account", "accounts:\n  - {accessKey: bobbobbob, secretKey: 12345678}\n  - {accessKey: bobbobbob, secretKey: 87654321}\n",
			"plain_acl.yml:3: account bobbobbob: accessKey given to two accounts"},
		{"dup key", "accounts:\n  - accessKey: bobbobbob\n    accessKey: bobbobbob2\n    secretKey: 12345678\n", "accessKey given twice"},
		{"published default", "accounts:\n  - accessKey: rocketmq2\n    secretKey: 12345678\n    admin: true\n", "published default account"},
		{"bad global", "globalWhiteRemoteAddresses: [1.2.3]\n", "plain_acl.yml:1: globalWhiteRemoteAddresses"},
		{"not a list", "accounts: {accessKey: x}\n", "accounts: want a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePlainACL([]byte(tt.yaml), "plain_acl.yml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// A file without accounts is refused (an empty or truncated file must not
// lock the cluster out) unless it says noAccounts: true.
func TestParsePlainACLEmpty(t *testing.T) {
	for _, s := range []string{"", "accounts:\n", "# nothing\n", "accounts: []\n", "noAccounts: false\n", "globalWhiteRemoteAddresses: [10.0.0.1]\n"} {
		if acl, err := ParsePlainACL([]byte(s), "x.yml"); !errors.Is(err, ErrNoAccounts) {
			t.Errorf("%q: %v %v", s, acl, err)
		}
	}
	acl, err := ParsePlainACL([]byte("noAccounts: true\naccounts: []\n"), "x.yml")
	if err != nil || acl.Len() != 0 || len(acl.Warnings) == 0 {
		t.Errorf("explicit: %v %v", acl, err)
	}
	_, err = ParsePlainACL([]byte("noAccounts: true\naccounts:\n  - {accessKey: bobbobbob, secretKey: bobsecret}\n"), "x.yml")
	if err == nil || !strings.Contains(err.Error(), "x.yml:1: noAccounts: true, but the file has 1 accounts") {
		t.Errorf("contradiction: %v", err)
	}
	if _, err = ParsePlainACL([]byte("noAccounts: yes\n"), "x.yml"); err == nil || !strings.Contains(err.Error(), "want true or false") {
		t.Errorf("noAccounts yes: %v", err)
	}
}

// FuzzParsePlainACL: the parser never panics, and what it accepts keeps
// its invariants (keys within bounds, no default account).
func FuzzParsePlainACL(f *testing.F) {
	data, _ := os.ReadFile("testdata/plain_acl.yml")
	f.Add(data)
	f.Add([]byte("accounts:\n  - &a {accessKey: bobbobbob, secretKey: 12345678}\n  - *a\n"))
	f.Add([]byte("globalWhiteRemoteAddresses: [\"2001:db8::{1,2}\", 1.2.3.1-9]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		acl, err := ParsePlainACL(data, "f.yml")
		if err != nil {
			return
		}
		for name, a := range acl.accounts {
			if len(name) < MinKeyLen || len(name) > MaxAccessKeyLen || len(a.secret) < MinKeyLen || publishedDefaults[name] == a.secret {
				t.Fatalf("accepted account %q", name)
			}
		}
	})
}
