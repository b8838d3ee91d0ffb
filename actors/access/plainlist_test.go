package access

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestPlainACLAccounts: the listing has every account's rules and never a
// secret.
func TestPlainACLAccounts(t *testing.T) {
	acl, err := ParsePlainACL([]byte(`globalWhiteRemoteAddresses: [10.10.*.*]
accounts:
  - accessKey: ops-admin
    secretKey: ops-admin-secret
    admin: true
  - accessKey: shop-app
    secretKey: shop-app-secret
    whiteRemoteAddress: 192.168.1.*
    defaultTopicPerm: SUB
    topicPerms: [orders=PUB|SUB, audit=DENY]
    groupPerms: [g_shop=SUB]
`), "plain_acl.yml")
	if err != nil {
		t.Fatal(err)
	}
	got := acl.Accounts()
	if len(got) != 2 || got[0].Name != "ops-admin" || !got[0].Admin || got[1].Name != "shop-app" || got[1].Admin {
		t.Fatalf("accounts %+v", got)
	}
	s := got[1]
	if s.White != "192.168.1.*" || s.DefaultTopicPerm != "SUB" || s.DefaultGroupPerm != "DENY" ||
		!slices.Equal(s.TopicPerms, []string{"audit=DENY", "orders=PUB|SUB"}) || !slices.Equal(s.GroupPerms, []string{"g_shop=SUB"}) {
		t.Fatalf("shop-app listed as %+v", s)
	}
	if w := acl.GlobalWhite(); !slices.Equal(w, []string{"10.10.*.*"}) {
		t.Fatalf("global white %q", w)
	}
	if text := fmt.Sprintf("%+v", got); strings.Contains(text, "secret") {
		t.Fatalf("the listing holds a secret: %s", text)
	}
}
