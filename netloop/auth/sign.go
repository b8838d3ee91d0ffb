package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"slices"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// The header fields of a signed request.
const (
	FieldAccessKey     = "AccessKey"
	FieldSignature     = "Signature"
	FieldSecurityToken = "SecurityToken"
	FieldOnsChannel    = "OnsChannel"
	fieldUniqueKey     = "_UNIQUE_KEY_QUERY"
	// uniqueKeyVersion is the last client version (Java V4_9_3) whose
	// _UNIQUE_KEY_QUERY field is not signed.
	uniqueKeyVersion = 399
)

// Content is what a request's signature covers: the values of its
// extFields but Signature (and, for version <= 399, _UNIQUE_KEY_QUERY),
// in the byte order of their keys, then body. skip names one more field to
// leave out ("" for none): the Go client sends SecurityToken unsigned.
func Content(fields map[string]string, body []byte, version int32, skip string) []byte {
	keys := make([]string, 0, len(fields))
	n := len(body)
	for k, v := range fields {
		if k == FieldSignature || (skip != "" && k == skip) || (k == fieldUniqueKey && version <= uniqueKeyVersion) {
			continue
		}
		keys = append(keys, k)
		n += len(v)
	}
	slices.Sort(keys)
	out := make([]byte, 0, n)
	for _, k := range keys {
		out = append(out, fields[k]...)
	}
	return append(out, body...)
}

// Signature returns base64(HMAC-SHA1(secretKey, content)).
func Signature(secretKey string, content []byte) string {
	m := hmac.New(sha1.New, []byte(secretKey))
	m.Write(content)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Sign signs cmd as a RocketMQ client does: it sets AccessKey (and
// SecurityToken when not empty), then Signature over the result.
func Sign(cmd *remoting.Command, accessKey, secretKey, securityToken string) {
	if cmd.ExtFields == nil {
		cmd.ExtFields = map[string]string{}
	}
	cmd.ExtFields[FieldAccessKey] = accessKey
	if securityToken != "" {
		cmd.ExtFields[FieldSecurityToken] = securityToken
	}
	delete(cmd.ExtFields, FieldSignature)
	cmd.ExtFields[FieldSignature] = Signature(secretKey, Content(cmd.ExtFields, cmd.Body, cmd.Version, ""))
}

// Verify reports whether cmd carries a valid signature made with
// secretKey, comparing in constant time. A request with a SecurityToken is
// also accepted when the token was left out of the content, as the Go
// client signs it.
func Verify(cmd *remoting.Command, secretKey string) bool {
	got := []byte(cmd.ExtFields[FieldSignature])
	if len(got) == 0 {
		return false
	}
	want := Signature(secretKey, Content(cmd.ExtFields, cmd.Body, cmd.Version, ""))
	if subtle.ConstantTimeCompare(got, []byte(want)) == 1 {
		return true
	}
	if _, ok := cmd.ExtFields[FieldSecurityToken]; ok {
		alt := Signature(secretKey, Content(cmd.ExtFields, cmd.Body, cmd.Version, FieldSecurityToken))
		return subtle.ConstantTimeCompare(got, []byte(alt)) == 1
	}
	return false
}
