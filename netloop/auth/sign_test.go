package auth

import (
	"testing"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// The test vectors of shared/security.md section 0 (secret 12345678,
// checked with openssl; the first is the signature in Metasploit's
// CVE-2023-33246 check packet).
func TestSignatureVectors(t *testing.T) {
	tests := []struct {
		fields  map[string]string
		body    string
		content string
		sig     string
	}{
		{map[string]string{"AccessKey": "rocketmq2", "topic": "TBW102"}, "", "rocketmq2TBW102", "/u5P/wZUbhjanu4LM/UzEdo2u2I="},
		{map[string]string{"AccessKey": "RocketMQ"}, `{"clientID":"x"}`, `RocketMQ{"clientID":"x"}`, "SC9kzFTBVLXXAqxyRji08hY5LG4="},
		{map[string]string{"AccessKey": "RocketMQ", "OnsChannel": "ALIYUN", "topic": "TopicA"}, "", "RocketMQALIYUNTopicA", "p8pEJu5L0ZC7GO43xVqziXfrwNQ="},
		{map[string]string{"AccessKey": "rocketmq2", "SecurityToken": "tok", "topic": "TBW102"}, "", "rocketmq2tokTBW102", "rhWBqyQEZ0WtXTPmhDDX4MielQQ="},
	}
	for _, tt := range tests {
		content := Content(tt.fields, []byte(tt.body), 317, "")
		if string(content) != tt.content {
			t.Errorf("content of %v = %q, want %q", tt.fields, content, tt.content)
		}
		if got := Signature("12345678", content); got != tt.sig {
			t.Errorf("signature of %q = %s, want %s", tt.content, got, tt.sig)
		}
		cmd := remoting.NewRequest(105, map[string]string{}, []byte(tt.body))
		for k, v := range tt.fields {
			cmd.ExtFields[k] = v
		}
		cmd.ExtFields[FieldSignature] = tt.sig
		if !Verify(cmd, "12345678") {
			t.Errorf("Verify refused %v", tt.fields)
		}
		if Verify(cmd, "12345679") {
			t.Errorf("Verify accepted %v with a wrong secret", tt.fields)
		}
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	cmd := remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "T", "queueId": "1"}, []byte("body"))
	Sign(cmd, "alice1", "secret-1", "")
	if !Verify(cmd, "secret-1") {
		t.Fatal("a signed request does not verify")
	}
	cmd.Body = []byte("bodY")
	if Verify(cmd, "secret-1") {
		t.Fatal("a modified body verifies")
	}
	cmd.Body = []byte("body")
	cmd.ExtFields["queueId"] = "2"
	if Verify(cmd, "secret-1") {
		t.Fatal("a modified field verifies")
	}
	delete(cmd.ExtFields, FieldSignature)
	if Verify(cmd, "secret-1") {
		t.Fatal("an unsigned request verifies")
	}
}

// The Go client puts SecurityToken on the wire but not into its content.
func TestVerifyGoClientSecurityToken(t *testing.T) {
	cmd := remoting.NewRequest(105, map[string]string{"AccessKey": "rocketmq2", "topic": "TBW102"}, nil)
	cmd.ExtFields[FieldSignature] = Signature("12345678", Content(cmd.ExtFields, nil, 317, ""))
	cmd.ExtFields[FieldSecurityToken] = "tok"
	if !Verify(cmd, "12345678") {
		t.Fatal("the Go client's SecurityToken form was refused")
	}
}

// Before version 400 the _UNIQUE_KEY_QUERY field is not signed.
func TestUniqueKeyQueryByVersion(t *testing.T) {
	f := map[string]string{"AccessKey": "a", "_UNIQUE_KEY_QUERY": "true", "topic": "T"}
	if got := string(Content(f, nil, 399, "")); got != "aT" {
		t.Errorf("v399 content %q", got)
	}
	if got := string(Content(f, nil, 479, "")); got != "atrueT" {
		t.Errorf("v479 content %q", got)
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("rocketmq2", "TBW102", "/u5P/wZUbhjanu4LM/UzEdo2u2I=", []byte(nil), "12345678")
	f.Add("", "", "", []byte("x"), "")
	f.Fuzz(func(t *testing.T, ak, topic, sig string, body []byte, secret string) {
		cmd := remoting.NewRequest(105, map[string]string{"AccessKey": ak, "topic": topic, "Signature": sig}, body)
		ok := Verify(cmd, secret)
		want := sig != "" && sig == Signature(secret, Content(cmd.ExtFields, body, cmd.Version, ""))
		if ok != want {
			t.Fatalf("Verify = %v, want %v", ok, want)
		}
	})
}

// A field with an empty name is signed as Java signs it.
func TestEmptyFieldNameIsSigned(t *testing.T) {
	if got := string(Content(map[string]string{"": "x", "a": "y"}, nil, 479, "")); got != "xy" {
		t.Fatalf("content %q, want xy", got)
	}
}
