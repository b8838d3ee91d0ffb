package adminbody

import (
	"reflect"
	"testing"
)

// The bodies as mqadmin 5.3.3 sends them (RemotingSerializable.encode of
// UserInfo.of and AclInfo.of: fastjson, properties sorted, nulls left out).
const (
	javaCreateUser = `{"password":"s3cret-pw","userType":"Normal","username":"alice"}`
	javaUpdateUser = `{"userStatus":"disable","username":"alice"}`
	javaCreateACL  = `{"policies":[{"entries":[{"actions":["Pub","Sub"],"decision":"Allow","resource":"Topic:orders","sourceIps":["10.0.0.0/8"]},` +
		`{"actions":["Pub","Sub"],"decision":"Allow","resource":"Group:billing","sourceIps":["10.0.0.0/8"]}]}],"subject":"User:alice"}`
)

func TestDecodeJavaAuthBodies(t *testing.T) {
	u, err := DecodeUserInfo([]byte(javaCreateUser))
	if err != nil {
		t.Fatal(err)
	}
	if u != (UserInfo{Password: "s3cret-pw", UserType: "Normal", Username: "alice"}) {
		t.Fatalf("create user %+v", u)
	}
	if u, err = DecodeUserInfo([]byte(javaUpdateUser)); err != nil || u != (UserInfo{UserStatus: "disable", Username: "alice"}) {
		t.Fatalf("update user %+v %v", u, err)
	}
	a, err := DecodeAclInfo([]byte(javaCreateACL))
	if err != nil {
		t.Fatal(err)
	}
	want := AclInfo{Subject: "User:alice", Policies: []PolicyInfo{{Entries: []PolicyEntryInfo{
		{Actions: []string{"Pub", "Sub"}, Decision: "Allow", Resource: "Topic:orders", SourceIps: []string{"10.0.0.0/8"}},
		{Actions: []string{"Pub", "Sub"}, Decision: "Allow", Resource: "Group:billing", SourceIps: []string{"10.0.0.0/8"}},
	}}}}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("acl %+v", a)
	}
	// What wheelmq writes back is Java's shape, byte for byte.
	if enc, err := EncodeAuth(want); err != nil || string(enc) != javaCreateACL {
		t.Fatalf("encode acl %s %v", enc, err)
	}
	if enc, err := EncodeAuth(UserInfo{Password: "s3cret-pw", UserType: "Normal", Username: "alice"}); err != nil ||
		string(enc) != javaCreateUser {
		t.Fatalf("encode user %s %v", enc, err)
	}
}

func TestDecodeAuthLenient(t *testing.T) {
	tests := []struct {
		body string
		want UserInfo
		bad  bool
	}{
		{``, UserInfo{}, false},
		{`null`, UserInfo{}, false},
		{`{"password":12345678,"username":"bob"}`, UserInfo{Password: "12345678", Username: "bob"}, false},
		{`{"PASSWORD":"x","userType":null,"extra":[1,2]}`, UserInfo{Password: "x"}, false},
		{`{"userType":true}`, UserInfo{UserType: "true"}, false},
		{`{"password":{"a":1}}`, UserInfo{}, true},
		{`{"password":["a"]}`, UserInfo{}, true},
		{`[`, UserInfo{}, true},
		{`"x"`, UserInfo{}, true},
	}
	for _, tt := range tests {
		got, err := DecodeUserInfo([]byte(tt.body))
		if (err != nil) != tt.bad || (!tt.bad && got != tt.want) {
			t.Errorf("%s: %+v, %v", tt.body, got, err)
		}
	}
	a, err := DecodeAclInfo([]byte(`{"subject":"User:a","policies":[{"entries":[{"actions":["Pub",7,null],"resource":"*"}],"policyType":null}]}`))
	if err != nil || len(a.Policies) != 1 || !reflect.DeepEqual(a.Policies[0].Entries[0].Actions, []string{"Pub", "7", ""}) {
		t.Fatalf("lenient acl %+v %v", a, err)
	}
	list, err := DecodeUserInfos([]byte(`[{"username":"a"},{"username":"b","userType":"Super"}]`))
	if err != nil || len(list) != 2 || list[1].UserType != "Super" {
		t.Fatalf("list %+v %v", list, err)
	}
	acls, err := DecodeAclInfos([]byte(`[` + javaCreateACL + `]`))
	if err != nil || len(acls) != 1 || acls[0].Subject != "User:alice" {
		t.Fatalf("acl list %+v %v", acls, err)
	}
}

// FuzzDecodeUserInfo checks that the decoder never panics and that what it
// accepts encodes to a body that decodes to the same value.
func FuzzDecodeUserInfo(f *testing.F) {
	for _, s := range []string{javaCreateUser, javaUpdateUser, `{}`, `null`, `{"password":1e3}`, `[{"username":"a"}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if u, err := DecodeUserInfo(b); err == nil {
			enc, err := EncodeAuth(u)
			if err != nil {
				t.Fatalf("encode %+v: %v", u, err)
			}
			back, err := DecodeUserInfo(enc)
			if err != nil || back != u {
				t.Fatalf("round trip of %s: %+v, %v; want %+v", enc, back, err, u)
			}
		}
		if us, err := DecodeUserInfos(b); err == nil {
			enc, err := EncodeAuth(us)
			if err != nil {
				t.Fatalf("encode %+v: %v", us, err)
			}
			back, err := DecodeUserInfos(enc)
			if err != nil || len(back) != len(us) {
				t.Fatalf("round trip of %s: %d users, %v; want %d", enc, len(back), err, len(us))
			}
		}
	})
}

// FuzzDecodeAclInfo is FuzzDecodeUserInfo for AclInfo and its lists.
func FuzzDecodeAclInfo(f *testing.F) {
	for _, s := range []string{javaCreateACL, `{}`, `{"policies":null}`, `{"policies":[{"entries":[{}]}]}`,
		`[` + javaCreateACL + `]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if a, err := DecodeAclInfo(b); err == nil {
			enc, err := EncodeAuth(a)
			if err != nil {
				t.Fatalf("encode %+v: %v", a, err)
			}
			back, err := DecodeAclInfo(enc)
			if err != nil {
				t.Fatalf("own encoding %s rejected: %v", enc, err)
			}
			if !reflect.DeepEqual(normalACL(back), normalACL(a)) {
				t.Fatalf("round trip of %s: %+v; want %+v", enc, back, a)
			}
		}
		if as, err := DecodeAclInfos(b); err == nil {
			enc, err := EncodeAuth(as)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if back, err := DecodeAclInfos(enc); err != nil || len(back) != len(as) {
				t.Fatalf("round trip of %s: %d, %v; want %d", enc, len(back), err, len(as))
			}
		}
	})
}

// normalACL drops what omitempty cannot carry: empty lists become nil, and
// empty strings inside lists stay (they are written).
func normalACL(a AclInfo) AclInfo {
	if len(a.Policies) == 0 {
		a.Policies = nil
	}
	for i := range a.Policies {
		p := &a.Policies[i]
		if len(p.Entries) == 0 {
			p.Entries = nil
		}
		for j := range p.Entries {
			e := &p.Entries[j]
			if len(e.Actions) == 0 {
				e.Actions = nil
			}
			if len(e.SourceIps) == 0 {
				e.SourceIps = nil
			}
		}
	}
	return a
}
