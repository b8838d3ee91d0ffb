package controller

// The cluster-secret challenge of a raft connection (raftsec.go), run
// before raft's first byte, inside TLS when TLS is on too:
//
//	dialer -> acceptor: "WMQRAFT1" | nonceD[32] | len(idD) u8 | idD
//	acceptor -> dialer: nonceA[32] | len(idA) u8 | idA | macA[32]
//	dialer -> acceptor: macD[32]
//	acceptor -> dialer: 0x01 (accepted; else the connection is closed)
//
//	T    = "wheelmq-raft-v1" | nonceD | nonceA | len(idD) idD | len(idA) idA
//	macA = HMAC-SHA256(secret, "acceptor" | T)
//	macD = HMAC-SHA256(secret, "dialer" | T)
//
// Both nonces are fresh (crypto/rand) per connection, so a recorded
// transcript replayed on a new connection fails (the other end's nonce
// differs); the role label keeps one end's proof from being reflected as
// the other's. The acceptor takes idD only from the configured peers, the
// dialer only the id it dialed. MACs are compared in constant time
// (hmac.Equal). The caller bounds the whole exchange with a deadline.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
)

const (
	secretMagic  = "WMQRAFT1"
	secretLabel  = "wheelmq-raft-v1"
	nonceLen     = 32
	macLen       = sha256.Size
	secretAccept = 0x01
)

// errBadProof is a MAC that does not match: the other end does not know
// the secret (or replayed another connection's proof).
var errBadProof = errors.New("cluster secret: proof does not match (wrong secret or replayed handshake)")

// secretTranscript is T.
func secretTranscript(nonceD, nonceA []byte, idD, idA string) []byte {
	var b bytes.Buffer
	b.WriteString(secretLabel)
	b.Write(nonceD)
	b.Write(nonceA)
	b.WriteByte(byte(len(idD)))
	b.WriteString(idD)
	b.WriteByte(byte(len(idA)))
	b.WriteString(idA)
	return b.Bytes()
}

// secretMAC is HMAC-SHA256(secret, role | T).
func secretMAC(secret []byte, role string, t []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(role))
	m.Write(t)
	return m.Sum(nil)
}

// secretClient runs the dialer's side: self is this node's id, peer the
// id dialed.
func secretClient(rw io.ReadWriter, secret []byte, self, peer string) error {
	if len(self) > 255 {
		return fmt.Errorf("cluster secret: id %q too long", self)
	}
	nonceD := make([]byte, nonceLen)
	if _, err := rand.Read(nonceD); err != nil {
		return fmt.Errorf("cluster secret: nonce: %w", err)
	}
	hello := append(append([]byte(secretMagic), nonceD...), byte(len(self)))
	if _, err := rw.Write(append(hello, self...)); err != nil {
		return fmt.Errorf("cluster secret: send hello: %w", err)
	}
	nonceA := make([]byte, nonceLen)
	if _, err := io.ReadFull(rw, nonceA); err != nil {
		return fmt.Errorf("cluster secret: read challenge: %w", err)
	}
	idA, err := readID(rw)
	if err != nil {
		return err
	}
	macA := make([]byte, macLen)
	if _, err := io.ReadFull(rw, macA); err != nil {
		return fmt.Errorf("cluster secret: read proof: %w", err)
	}
	if idA != peer {
		return fmt.Errorf("cluster secret: dialed %s, the peer says it is %q", peer, idA)
	}
	t := secretTranscript(nonceD, nonceA, self, idA)
	if !hmac.Equal(macA, secretMAC(secret, "acceptor", t)) {
		return errBadProof
	}
	if _, err := rw.Write(secretMAC(secret, "dialer", t)); err != nil {
		return fmt.Errorf("cluster secret: send proof: %w", err)
	}
	ack := make([]byte, 1)
	if _, err := io.ReadFull(rw, ack); err != nil {
		return fmt.Errorf("cluster secret: refused by the peer: %w", err)
	}
	if ack[0] != secretAccept {
		return fmt.Errorf("cluster secret: refused by the peer (answer %#x)", ack[0])
	}
	return nil
}

// secretServer runs the acceptor's side: self is this node's id, allowed
// the ids a dialer may prove. It returns the dialer's id.
func secretServer(rw io.ReadWriter, secret []byte, self string, allowed []string) (string, error) {
	magic := make([]byte, len(secretMagic))
	if _, err := io.ReadFull(rw, magic); err != nil {
		return "", fmt.Errorf("cluster secret: read hello: %w", err)
	}
	if string(magic) != secretMagic {
		return "", fmt.Errorf("cluster secret: not a wheelmq controller handshake (first bytes %q)", magic)
	}
	nonceD := make([]byte, nonceLen)
	if _, err := io.ReadFull(rw, nonceD); err != nil {
		return "", fmt.Errorf("cluster secret: read hello: %w", err)
	}
	idD, err := readID(rw)
	if err != nil {
		return "", err
	}
	if !slices.Contains(allowed, idD) {
		return "", fmt.Errorf("cluster secret: %q is not a configured controller peer", idD)
	}
	if len(self) > 255 {
		return "", fmt.Errorf("cluster secret: id %q too long", self)
	}
	nonceA := make([]byte, nonceLen)
	if _, err := rand.Read(nonceA); err != nil {
		return "", fmt.Errorf("cluster secret: nonce: %w", err)
	}
	t := secretTranscript(nonceD, nonceA, idD, self)
	msg := append(append(append(nonceA, byte(len(self))), self...), secretMAC(secret, "acceptor", t)...)
	if _, err := rw.Write(msg); err != nil {
		return "", fmt.Errorf("cluster secret: send challenge: %w", err)
	}
	macD := make([]byte, macLen)
	if _, err := io.ReadFull(rw, macD); err != nil {
		return "", fmt.Errorf("cluster secret: read proof: %w", err)
	}
	if !hmac.Equal(macD, secretMAC(secret, "dialer", t)) {
		return "", fmt.Errorf("%w (from %q)", errBadProof, idD)
	}
	if _, err := rw.Write([]byte{secretAccept}); err != nil {
		return "", fmt.Errorf("cluster secret: send accept: %w", err)
	}
	return idD, nil
}

// readID reads a length-prefixed id.
func readID(r io.Reader) (string, error) {
	n := make([]byte, 1)
	if _, err := io.ReadFull(r, n); err != nil {
		return "", fmt.Errorf("cluster secret: read id: %w", err)
	}
	id := make([]byte, n[0])
	if _, err := io.ReadFull(r, id); err != nil {
		return "", fmt.Errorf("cluster secret: read id: %w", err)
	}
	return string(id), nil
}
