package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"net/netip"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// ViewCache is one connection's scratch for AllowView: the account its
// requests last named (most connections sign with one key), the HMAC
// keyed with its secret, and buffers. Used by one goroutine at a time
// (the connection's event loop); the zero value is ready.
type ViewCache struct {
	gen    uint64
	ak     []byte
	acct   Account
	mac    hash.Hash
	macKey string
	order  []int
	sum    [sha1.Size]byte
	b64    [signatureLen]byte
}

// AllowView is Check for a request read in place (the plain-send hot
// path), without allocating once the cache is warm: true when the
// request is authenticated and has need. False means "not here": the
// caller hands the request to the general path, whose Check decides it
// again, refuses it and counts it; AllowView counts and logs nothing.
// It also says false for what it does not handle (the IP-bypass option,
// an extFields key given twice).
func (g *Guard) AllowView(remote netip.AddrPort, v *remoting.HeaderView, need Need, c *ViewCache) bool {
	if g.bypass {
		return false
	}
	ak, _ := v.Field(FieldAccessKey)
	if len(ak) == 0 || len(ak) > MaxAccessKeyLen {
		return false
	}
	sig, _ := v.Field(FieldSignature)
	if len(sig) != signatureLen {
		return false
	}
	dir, gen := g.directory()
	if c.acct == nil || c.gen != gen || !bytes.Equal(c.ak, ak) {
		acct, ok := dir.Lookup(string(ak))
		if !ok {
			return false
		}
		c.gen, c.ak, c.acct = gen, append(c.ak[:0], ak...), acct
	}
	acct := c.acct
	if !c.verify(v, acct.SecretKey(), sig) {
		return false
	}
	return decideAccount(acct, remote.Addr().Unmap(), v.Code, Needs{Resources: []Need{need}}) == nil
}

// verify checks the view's signature with secret, as Verify does.
func (c *ViewCache) verify(v *remoting.HeaderView, secret string, sig []byte) bool {
	if c.mac == nil || c.macKey != secret {
		c.mac, c.macKey = hmac.New(sha1.New, []byte(secret)), secret
	}
	// The fields in key order, Signature (and for old versions
	// _UNIQUE_KEY_QUERY) left out; a key given twice is declined, as the
	// decoded map would keep only its last value.
	c.order = c.order[:0]
	token := -1
	for i := range v.NumFields() {
		k, _ := v.FieldAt(i)
		if string(k) == FieldSignature || (string(k) == fieldUniqueKey && v.Version <= uniqueKeyVersion) {
			continue
		}
		j := len(c.order)
		c.order = append(c.order, i)
		for ; j > 0; j-- {
			pk, _ := v.FieldAt(c.order[j-1])
			cmp := bytes.Compare(pk, k)
			if cmp == 0 {
				return false
			}
			if cmp < 0 {
				break
			}
			c.order[j] = c.order[j-1]
		}
		c.order[j] = i
		if string(k) == FieldSecurityToken {
			token = i
		}
	}
	if c.sign(v, -1, sig) {
		return true
	}
	return token >= 0 && c.sign(v, token, sig) // the Go client leaves the token out
}

// sign computes the signature over the ordered fields but skip (-1: none)
// and the body, and compares it with sig in constant time.
func (c *ViewCache) sign(v *remoting.HeaderView, skip int, sig []byte) bool {
	c.mac.Reset()
	for _, i := range c.order {
		if i == skip {
			continue
		}
		_, val := v.FieldAt(i)
		c.mac.Write(val)
	}
	c.mac.Write(v.Body)
	sum := c.mac.Sum(c.sum[:0])
	base64.StdEncoding.Encode(c.b64[:], sum)
	return subtle.ConstantTimeCompare(c.b64[:], sig) == 1
}
