package process

import (
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// TestHAToken: without credentials the token is the group's name; with
// them it carries an HMAC of it that differs per secret and per group.
func TestHAToken(t *testing.T) {
	plain := haToken(&pipeline.Config{Cluster: "c", BrokerName: "b"})
	if plain != "c/b" {
		t.Fatalf("token without credentials %q", plain)
	}
	withKey := func(cluster, broker, secret string) string {
		return haToken(&pipeline.Config{Cluster: cluster, BrokerName: broker,
			RegisterCredentials: auth.Credentials{AccessKey: "ak", SecretKey: secret}})
	}
	a := withKey("c", "b", "s1")
	if !strings.HasPrefix(a, "c/b/") || len(a) != len("c/b/")+64 {
		t.Fatalf("token with credentials %q", a)
	}
	if a == withKey("c", "b", "s2") || a == withKey("c", "b2", "s1") || a != withKey("c", "b", "s1") {
		t.Fatal("token does not depend on exactly the secret and the group")
	}
}
