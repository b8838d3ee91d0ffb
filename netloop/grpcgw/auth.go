package grpcgw

// Request metadata: the client id and the authorization header
// (docs/grpc.md, "Auth"; RocketMQ's MQv2-HMAC-SHA1 recipe).

import (
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the RocketMQ 5 SDKs sign with HMAC-SHA1
	"encoding/hex"
	"errors"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/wheelmq/wheelmq/netloop/auth"
)

// Metadata header names the SDKs send.
const (
	headerClientID      = "x-mq-client-id"
	headerDateTime      = "x-mq-date-time"
	headerAuthorization = "authorization"
	headerNamespace     = "x-mq-namespace"
	headerLanguage      = "x-mq-language"
)

// authScheme opens the authorization header's value.
const authScheme = "MQv2-HMAC-SHA1"

// errUnauthorized is a bad, unknown or missing signature under an ACL.
var errUnauthorized = errors.New("authentication failed")

// caller is what the metadata of one call says.
type caller struct {
	clientID  string
	namespace string
	language  string
	creds     auth.Credentials // the account the internal requests are signed as (zero: unsigned)
}

// first is a header's first value ("" if absent).
func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// parseAuthorization splits "MQv2-HMAC-SHA1 Credential=AK[/...],
// SignedHeaders=x-mq-date-time, Signature=hex" into the access key and the
// signature.
func parseAuthorization(h string) (accessKey, signature string, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(h), authScheme)
	if !ok {
		return "", "", errors.New("authorization: not " + authScheme)
	}
	for part := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "Credential":
			accessKey, _, _ = strings.Cut(strings.TrimSpace(v), "/")
		case "Signature":
			signature = strings.TrimSpace(v)
		}
	}
	if accessKey == "" || signature == "" {
		return "", "", errors.New("authorization: no Credential or Signature")
	}
	return accessKey, signature, nil
}

// signatureOK checks hex(HMAC-SHA1(secret, dateTime)), case-insensitively.
func signatureOK(secret, dateTime, signature string) bool {
	want, err := hex.DecodeString(strings.ToLower(signature))
	if err != nil {
		return false
	}
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(dateTime))
	return hmac.Equal(mac.Sum(nil), want)
}

// callerOf reads ctx's metadata; with a guard it verifies the signature
// and returns the account's credentials.
func callerOf(ctx context.Context, guard *auth.Guard) (caller, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	c := caller{clientID: first(md, headerClientID), namespace: first(md, headerNamespace), language: first(md, headerLanguage)}
	if guard == nil {
		return c, nil
	}
	ak, sig, err := parseAuthorization(first(md, headerAuthorization))
	if err != nil {
		return c, errors.Join(errUnauthorized, err)
	}
	acct, ok := guard.Lookup(ak)
	if !ok {
		return c, errors.Join(errUnauthorized, errors.New("unknown access key "+quote(ak)))
	}
	if !signatureOK(acct.SecretKey(), first(md, headerDateTime), sig) {
		return c, errors.Join(errUnauthorized, errors.New("signature mismatch for access key "+quote(ak)))
	}
	c.creds = auth.Credentials{AccessKey: acct.Name(), SecretKey: acct.SecretKey()}
	return c, nil
}

// quote bounds a client-supplied string for a remark.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return "\"" + s + "\""
}
