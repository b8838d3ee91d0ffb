package access

import (
	"fmt"
	"strings"
	"testing"
)

// TestCredentialsHideTheSecret: no printing verb shows the secret key.
func TestCredentialsHideTheSecret(t *testing.T) {
	c := Credentials{AccessKey: "broker-ak", SecretKey: "s3cret-value"}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		out := fmt.Sprintf(verb, c)
		if strings.Contains(out, "s3cret") || !strings.Contains(out, "broker-ak") {
			t.Errorf("%s printed %q", verb, out)
		}
	}
	if fmt.Sprint(struct{ C Credentials }{c}) != `{access key "broker-ak" (secret hidden)}` {
		t.Errorf("in a struct: %v", struct{ C Credentials }{c})
	}
	if !(Credentials{AccessKey: "a"}).IsZero() || c.IsZero() {
		t.Error("IsZero")
	}
}
