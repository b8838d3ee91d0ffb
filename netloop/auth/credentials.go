package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"hash"
	"slices"
	"strings"
	"sync"

	"github.com/wheelmq/wheelmq/actors/access"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Credentials are what a client signs its requests with (RocketMQ's
// SessionCredentials). Printing them (%v, %s, %#v, %+v) shows the access
// key and never the secret.
//
// They are access.Credentials (the plain data the stages configure) with
// the signing methods of this package.
type Credentials access.Credentials

// IsZero reports credentials that sign nothing: no access key or no
// secret key.
func (c Credentials) IsZero() bool { return access.Credentials(c).IsZero() }

// Signer returns the signing hook for remoting.ClientOptions.Sign, or nil
// when c IsZero. It signs exactly as Sign does (the same fields, the same
// content, the same signature), for less: the fields come sorted, and the
// HMAC state and the content buffer are reused between requests (pooled,
// so the hook may run on many goroutines at once).
func (c Credentials) Signer() func(req *remoting.Command, fields []remoting.Field) []remoting.Field {
	if c.IsZero() {
		return nil
	}
	s := &signer{c: c}
	s.states.New = func() any { return &signState{mac: hmac.New(sha1.New, []byte(c.SecretKey))} }
	return s.sign
}

// signer is the hook Signer returns.
type signer struct {
	c      Credentials
	states sync.Pool // *signState
}

// signState is what one signing reuses.
type signState struct {
	mac hash.Hash
	buf []byte
	sum [sha1.Size]byte
}

// maxKeptContent is the largest content buffer a signState keeps.
const maxKeptContent = 64 << 10

// sign signs a request whose header fields are fields, sorted by key: it
// sets AccessKey (and SecurityToken), drops any Signature, and appends the
// Signature over the values in key order and the body (see Content).
func (s *signer) sign(req *remoting.Command, fields []remoting.Field) []remoting.Field {
	out := fields[:0]
	for _, f := range fields {
		switch f.Key {
		case FieldSignature, FieldAccessKey:
			continue
		case FieldSecurityToken:
			if s.c.SecurityToken != "" {
				continue
			}
		}
		out = append(out, f)
	}
	out = insertSorted(out, remoting.Field{Key: FieldAccessKey, Value: s.c.AccessKey})
	if s.c.SecurityToken != "" {
		out = insertSorted(out, remoting.Field{Key: FieldSecurityToken, Value: s.c.SecurityToken})
	}
	st := s.states.Get().(*signState)
	st.buf = st.buf[:0]
	for _, f := range out {
		if f.Key == fieldUniqueKey && req.Version <= uniqueKeyVersion {
			continue
		}
		st.buf = append(st.buf, f.Value...)
	}
	st.mac.Reset()
	st.mac.Write(st.buf)
	st.mac.Write(req.Body)
	out = append(out, remoting.Field{Key: FieldSignature, Value: base64.StdEncoding.EncodeToString(st.mac.Sum(st.sum[:0]))})
	if cap(st.buf) <= maxKeptContent {
		s.states.Put(st)
	}
	return out
}

// insertSorted inserts f into fields, sorted by key, at its place.
func insertSorted(fields []remoting.Field, f remoting.Field) []remoting.Field {
	i, _ := slices.BinarySearchFunc(fields, f.Key, func(x remoting.Field, k string) int { return strings.Compare(x.Key, k) })
	return slices.Insert(fields, i, f)
}

// String shows the access key only.
func (c Credentials) String() string { return access.Credentials(c).String() }

// GoString is String, for %#v.
func (c Credentials) GoString() string { return c.String() }

// Format prints String for every verb, so that no verb (%+v included)
// shows the secret.
func (c Credentials) Format(f fmt.State, _ rune) { _, _ = fmt.Fprint(f, c.String()) }
