package grpcgw

// Request metadata: the client id and the authorization header
// (docs/grpc.md, "Auth"; RocketMQ's MQv2-HMAC-SHA1 recipe).

import (
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the RocketMQ 5 SDKs sign with HMAC-SHA1
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"path"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

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

// caller is what the metadata of one call says.
type caller struct {
	clientID  string
	namespace string
	language  string
	creds     auth.Credentials // the account the internal requests are signed as (zero: unsigned)
}

// first is a header's first value ("" if absent).
func first(ctx context.Context, key string) string {
	// ValueFromIncomingContext reads the one key; FromIncomingContext would
	// copy the whole metadata map on every call.
	if v := metadata.ValueFromIncomingContext(ctx, key); len(v) > 0 {
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

// DefaultSignatureSkew is how far a call's signed x-mq-date-time may be
// from the server's clock, either way, by default.
const DefaultSignatureSkew = 15 * time.Minute

// dateTimeLayout is x-mq-date-time's form ("20060102T150405Z").
const dateTimeLayout = "20060102T150405Z"

// authFailedRemark is the one answer to an unknown access key and a wrong
// secret: the client is not told which keys exist (the log and the
// metric say which).
const authFailedRemark = "authentication failed: unknown access key, or the signature does not match its secret"

// ParseOffsets reads a comma-separated list of clock offsets (8h, -5h30m)
// for Options.SignatureOffsets; each within ±14h.
func ParseOffsets(list string) ([]time.Duration, error) {
	var out []time.Duration
	for part := range strings.SplitSeq(list, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		d, err := time.ParseDuration(part)
		if err != nil {
			return nil, fmt.Errorf("clock offset %q: %w", part, err)
		}
		if d > 14*time.Hour || d < -14*time.Hour {
			return nil, fmt.Errorf("clock offset %s beyond ±14h", d)
		}
		out = append(out, d)
	}
	return out, nil
}

// verifier checks the authorization of calls (nil guard: none).
type verifier struct {
	guard *auth.Guard
	// skew bounds |x-mq-date-time - (now + offset)| for some offset.
	skew    time.Duration
	offsets []time.Duration
	now     func() time.Time
}

// refuse counts and logs a refusal and makes the caller's error.
func (v *verifier) refuse(ctx context.Context, ak string, r auth.Reason, remark string) error {
	var remote netip.AddrPort
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		remote, _ = netip.ParseAddrPort(p.Addr.String())
	}
	method, _ := grpc.Method(ctx)
	v.guard.RefusedCall(remote, path.Base(method), ak, &auth.Refusal{Reason: r, Remark: remark})
	return errors.New(remark)
}

// fresh reports whether a signed date is within the skew of the server's
// clock (shifted by one of the accepted offsets).
func (v *verifier) fresh(dateTime string) bool {
	t, err := time.Parse(dateTimeLayout, dateTime)
	if err != nil {
		return false
	}
	now := v.now()
	for _, off := range v.offsets {
		if d := t.Sub(now.Add(off)); d <= v.skew && d >= -v.skew {
			return true
		}
	}
	return false
}

// callerOf reads ctx's metadata; with a guard it verifies the signature
// (and the freshness of the date it signs) and returns the account's
// credentials. A refusal is counted in wheelmq_auth_refused_total{reason}.
func (v *verifier) callerOf(ctx context.Context) (caller, error) {
	c := caller{clientID: first(ctx, headerClientID), namespace: first(ctx, headerNamespace), language: first(ctx, headerLanguage)}
	if v.guard == nil {
		return c, nil
	}
	ak, sig, err := parseAuthorization(first(ctx, headerAuthorization))
	if err != nil {
		return c, v.refuse(ctx, "", auth.ReasonMalformed, "authentication failed: "+err.Error())
	}
	dt := first(ctx, headerDateTime)
	if !v.fresh(dt) {
		return c, v.refuse(ctx, ak, auth.ReasonStaleDate, fmt.Sprintf(
			"authentication failed: %s %s is not within %s of the server's clock (UTC, %s)", headerDateTime, quote(dt), v.skew, dateTimeLayout))
	}
	if len(ak) > auth.MaxAccessKeyLen {
		return c, v.refuse(ctx, ak, auth.ReasonUnknownKey, authFailedRemark)
	}
	acct, ok := v.guard.Lookup(ak)
	if !ok {
		return c, v.refuse(ctx, ak, auth.ReasonUnknownKey, authFailedRemark)
	}
	if !signatureOK(acct.SecretKey(), dt, sig) {
		return c, v.refuse(ctx, ak, auth.ReasonBadSignature, authFailedRemark)
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
