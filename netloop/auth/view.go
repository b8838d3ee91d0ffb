package auth

import (
	"bytes"
	"crypto/sha1"
	"crypto/subtle"
	"encoding"
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
	gen  uint64
	ak   []byte
	acct Account
	// The HMAC-SHA1 of macKey, by hand (crypto/hmac's Reset and Sum cost
	// more than the hashing for a request's few hundred bytes): one SHA-1
	// reused, and its states after the key's inner and outer pads.
	h                      hash.Hash
	macKey                 string
	keySet                 bool
	innerState, outerState []byte
	buf                    []byte // the ordered values, hashed at once
	sum                    [sha1.Size]byte
	b64                    [signatureLen]byte
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
	// One pass: the fields in key order (Signature, and for old versions
	// _UNIQUE_KEY_QUERY, left out), the access key and the signature. A
	// key given twice is declined: the decoded map keeps only its last
	// value.
	// On the stack: the entries' order by key (indexes into the view),
	// sorted by insertion.
	var order [maxViewFields]uint8
	n := 0
	var ak, sig []byte
	token := -1
	for i := range v.NumFields() {
		k, val := v.FieldAt(i)
		switch {
		case string(k) == FieldSignature:
			sig = val
			continue
		case string(k) == fieldUniqueKey && v.Version <= uniqueKeyVersion:
			continue
		case string(k) == FieldAccessKey:
			ak = val
		}
		if n == maxViewFields {
			return false
		}
		j := n
		for ; j > 0; j-- {
			pk, _ := v.FieldAt(int(order[j-1]))
			cmp := bytes.Compare(pk, k)
			if cmp == 0 {
				return false
			}
			if cmp < 0 {
				break
			}
			order[j] = order[j-1]
		}
		order[j] = uint8(i)
		n++
		if string(k) == FieldSecurityToken {
			token = 1 // found; its place is looked up if needed
		}
	}
	if len(ak) == 0 || len(ak) > MaxAccessKeyLen || len(sig) != signatureLen {
		return false
	}
	gen := g.generation()
	if c.acct == nil || c.gen != gen || !bytes.Equal(c.ak, ak) {
		dir, _ := g.directory()
		acct, ok := dir.Lookup(string(ak))
		if !ok {
			return false
		}
		c.gen, c.ak, c.acct = gen, append(c.ak[:0], ak...), acct
	}
	acct := c.acct
	if secret := acct.SecretKey(); !c.keySet || c.macKey != secret {
		c.setKey(secret)
	}
	if !c.sign(v, order[:n], false, sig) && (token < 0 || !c.sign(v, order[:n], true, sig)) { // the Go client leaves the token out
		return false
	}
	return decideAccount(acct, remote.Addr().Unmap(), v.Code, Needs{Resources: []Need{need}}) == nil
}

// maxViewFields bounds the extFields AllowView sorts (a send has about
// 16); a request with more goes to the general path.
const maxViewFields = 64

// setKey computes the pads of an HMAC key (RFC 2104: a key longer than a
// block is hashed first).
func (c *ViewCache) setKey(secret string) {
	c.macKey, c.keySet = secret, true
	if c.h == nil {
		c.h = sha1.New()
	}
	var k, ipad, opad [sha1.BlockSize]byte
	if len(secret) > sha1.BlockSize {
		sum := sha1.Sum([]byte(secret))
		copy(k[:], sum[:])
	} else {
		copy(k[:], secret)
	}
	for i := range k {
		ipad[i], opad[i] = k[i]^0x36, k[i]^0x5c
	}
	h := c.h
	h.Reset()
	h.Write(ipad[:])
	c.innerState, _ = h.(encoding.BinaryMarshaler).MarshalBinary()
	h.Reset()
	h.Write(opad[:])
	c.outerState, _ = h.(encoding.BinaryMarshaler).MarshalBinary()
}

// sign computes the signature over the ordered fields (without
// SecurityToken when skipToken) and the body, and compares it with sig in
// constant time.
func (c *ViewCache) sign(v *remoting.HeaderView, order []uint8, skipToken bool, sig []byte) bool {
	c.buf = c.buf[:0]
	for _, i := range order {
		k, val := v.FieldAt(int(i))
		if skipToken && string(k) == FieldSecurityToken {
			continue
		}
		c.buf = append(c.buf, val...)
	}
	h := c.h
	u := h.(encoding.BinaryUnmarshaler)
	if u.UnmarshalBinary(c.innerState) != nil {
		return false
	}
	h.Write(c.buf)
	h.Write(v.Body)
	inner := h.Sum(c.sum[:0])
	if u.UnmarshalBinary(c.outerState) != nil {
		return false
	}
	h.Write(inner)
	sum := h.Sum(c.sum[:0])
	base64.StdEncoding.Encode(c.b64[:], sum)
	return subtle.ConstantTimeCompare(c.b64[:], sig) == 1
}
