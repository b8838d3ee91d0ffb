package auth

import (
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func TestCredentialsNeverPrintTheSecret(t *testing.T) {
	c := Credentials{AccessKey: "alice", SecretKey: "very-secret-42", SecurityToken: "tok-9"}
	type holder struct {
		Name string
		C    Credentials
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		for _, v := range []any{c, &c, holder{"x", c}, &holder{"x", c}} {
			if out := fmt.Sprintf(verb, v); strings.Contains(out, "very-secret") || strings.Contains(out, "tok-9") ||
				strings.Contains(out, hex.EncodeToString([]byte("very-secret-42"))) {
				t.Errorf("%s of %T shows the secret: %s", verb, v, out)
			}
		}
	}
	if !strings.Contains(c.String(), "alice") {
		t.Errorf("String %q does not name the access key", c.String())
	}
	if (Credentials{AccessKey: "a"}).Signer() != nil || (Credentials{SecretKey: "s"}).Signer() != nil {
		t.Fatal("half credentials sign")
	}
	cmd := remoting.NewRequest(105, map[string]string{"topic": "T"}, nil)
	cmd.ExtFields = asMap(c.Signer()(cmd, []remoting.Field{{Key: "topic", Value: "T"}}))
	if cmd.Field(FieldAccessKey) != "alice" || cmd.Field(FieldSecurityToken) != "tok-9" || !Verify(cmd, "very-secret-42") {
		t.Fatalf("signed: %v", cmd.ExtFields)
	}
}

// The reusing signer of Credentials.Signer signs exactly as Sign.
func FuzzSignerMatchesSign(f *testing.F) {
	f.Add("alice", "s3cret", "", "T", "x", "3", []byte("body"), int32(479), false)
	f.Add("a", "b", "tok", "", "", "", []byte(nil), int32(317), true)
	f.Fuzz(func(t *testing.T, ak, sk, tok, k1, v1, v2 string, body []byte, version int32, uniq bool) {
		c := Credentials{AccessKey: ak, SecretKey: sk, SecurityToken: tok}
		sign := c.Signer()
		if c.IsZero() {
			if sign != nil {
				t.Fatal("zero credentials sign")
			}
			return
		}
		fields := func() map[string]string {
			m := map[string]string{"topic": v1, k1: v2, FieldSignature: "stale"}
			if uniq {
				m[fieldUniqueKey] = "true"
			}
			return m
		}
		a := remoting.NewRequest(10, fields(), body)
		a.Version = version
		b := remoting.NewRequest(10, fields(), body)
		b.Version = version
		for range 2 { // the second time with reused state, from signed fields
			Sign(a, ak, sk, tok)
			var sorted []remoting.Field
			for _, k := range slices.Sorted(maps.Keys(b.ExtFields)) {
				sorted = append(sorted, remoting.Field{Key: k, Value: b.ExtFields[k]})
			}
			out := sign(b, sorted)
			b.ExtFields = asMap(out)
			if len(b.ExtFields) != len(out) {
				t.Fatalf("a key twice: %v", out)
			}
			if !maps.Equal(a.ExtFields, b.ExtFields) {
				t.Fatalf("Sign %v, Signer %v", a.ExtFields, b.ExtFields)
			}
			if !Verify(b, sk) {
				t.Fatalf("Signer's request does not verify: %v", b.ExtFields)
			}
		}
	})
}

// asMap is fields as a map, as the receiver decodes them.
func asMap(fields []remoting.Field) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		m[f.Key] = f.Value
	}
	return m
}
