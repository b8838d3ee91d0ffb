// Package challenge is the mutual proof of a shared secret that opens a
// connection between two wheelmq peers (the controllers' raft port,
// actors/controller; the replication stream's HA port,
// actors/replication): each end proves HMAC-SHA256(secret, role | T) over
// a transcript T holding both ends' fresh nonces and ids, so the secret
// itself never crosses the wire and a recorded exchange replayed on a new
// connection fails.
//
//	dialer -> acceptor: Magic[8] | nonceD[32] | len(idD) u8 | idD
//	acceptor -> dialer: nonceA[32] | len(idA) u8 | idA | macA[32]
//	dialer -> acceptor: macD[32] (| Then: the caller's first bytes)
//	acceptor -> dialer: 0x01 Accepted (else the caller refuses and closes)
//
//	T    = Label | nonceD | nonceA | len(idD) idD | len(idA) idA [| len(B) u8 | B]
//	macA = HMAC-SHA256(secret, "acceptor" | T)
//	macD = HMAC-SHA256(secret, "dialer" | T)
//
// B is the channel binding (Params.Binding; absent when empty): inside TLS,
// the TLS exporter of the connection (TLSBinding), so that a proof made
// on one TLS connection is worth nothing on another (a man in the middle
// that terminates TLS on both sides cannot relay it). The role label keeps
// one end's proof from being reflected as the other's. The dialer accepts
// only the acceptor id it expected, the acceptor only the dialer ids its
// Allow takes. MACs are compared in constant time. The package writes
// nothing on a failure (the caller closes, or sends its own fixed
// refusal), has no goroutines and sets no deadline: the caller bounds the
// exchange with one.
package challenge

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
)

// Wire sizes.
const (
	// MagicLen is the length of Params.Magic.
	MagicLen = 8
	// NonceLen is a nonce's length.
	NonceLen = 32
	// MACLen is a proof's length (HMAC-SHA256).
	MACLen = sha256.Size
	// MaxIDLen bounds an id (its length is one byte on the wire).
	MaxIDLen = 255
	// Accepted is the acceptor's last byte when it took the dialer's proof.
	Accepted = 0x01
)

// Errors; test with errors.Is.
var (
	// ErrBadProof is a MAC that does not match: the other end does not
	// know the secret (or replayed another connection's proof).
	ErrBadProof = errors.New("challenge: proof does not match (wrong secret or replayed handshake)")
	// ErrNotOurs means the first bytes are not this protocol's Magic.
	ErrNotOurs = errors.New("challenge: not this protocol's handshake")
	// ErrPeer means the other end's id is not the one expected (dialer)
	// or not one allowed (acceptor).
	ErrPeer = errors.New("challenge: unexpected peer id")
	// ErrRefused means the acceptor did not accept the dialer's proof.
	ErrRefused = errors.New("challenge: refused by the peer")
)

// Params are what both ends of one protocol share.
type Params struct {
	// Magic opens the dialer's hello (exactly MagicLen bytes).
	Magic string
	// Label opens the transcript: the protocol and its version.
	Label string
	// Secret is the shared secret (the HMAC key).
	Secret []byte
	// Binding, when set, ties the proofs to this connection (TLSBinding);
	// both ends must compute the same (at most MaxIDLen bytes).
	Binding []byte
}

// TLSBinding is the channel binding of a TLS connection whose handshake
// is done: 32 bytes of its keying material exported under label.
func TLSBinding(cs tls.ConnectionState, label string) ([]byte, error) {
	b, err := cs.ExportKeyingMaterial(label, nil, 32)
	if err != nil {
		return nil, fmt.Errorf("challenge: tls channel binding: %w", err)
	}
	return b, nil
}

// transcript is T.
func (p Params) transcript(nonceD, nonceA []byte, idD, idA string) []byte {
	var b bytes.Buffer
	b.WriteString(p.Label)
	b.Write(nonceD)
	b.Write(nonceA)
	b.WriteByte(byte(len(idD)))
	b.WriteString(idD)
	b.WriteByte(byte(len(idA)))
	b.WriteString(idA)
	if len(p.Binding) > 0 {
		b.WriteByte(byte(len(p.Binding)))
		b.Write(p.Binding)
	}
	return b.Bytes()
}

// mac is HMAC-SHA256(secret, role | T).
func (p Params) mac(role string, t []byte) []byte {
	m := hmac.New(sha256.New, p.Secret)
	m.Write([]byte(role))
	m.Write(t)
	return m.Sum(nil)
}

func (p Params) check(ids ...string) error {
	if len(p.Magic) != MagicLen {
		return fmt.Errorf("challenge: magic %q is not %d bytes", p.Magic, MagicLen)
	}
	if len(p.Binding) > MaxIDLen {
		return fmt.Errorf("challenge: binding of %d bytes", len(p.Binding))
	}
	for _, id := range ids {
		if len(id) > MaxIDLen {
			return fmt.Errorf("challenge: id %q too long", id)
		}
	}
	return nil
}

// Dial runs the dialer's side: self is this end's id, peer the id the
// acceptor must prove. then (may be nil) is written right after the proof,
// in the same write, before the acceptor's answer is read: the caller's
// first message reaches the acceptor without another round trip, and only
// after this end verified the acceptor.
func Dial(rw io.ReadWriter, p Params, self, peer string, then []byte) error {
	if err := p.check(self, peer); err != nil {
		return err
	}
	nonceD := make([]byte, NonceLen)
	if _, err := rand.Read(nonceD); err != nil {
		return fmt.Errorf("challenge: nonce: %w", err)
	}
	hello := append(append([]byte(p.Magic), nonceD...), byte(len(self)))
	if _, err := rw.Write(append(hello, self...)); err != nil {
		return fmt.Errorf("challenge: send hello: %w", err)
	}
	nonceA := make([]byte, NonceLen)
	if _, err := io.ReadFull(rw, nonceA); err != nil {
		return fmt.Errorf("challenge: read challenge: %w", err)
	}
	idA, err := readID(rw)
	if err != nil {
		return err
	}
	macA := make([]byte, MACLen)
	if _, err := io.ReadFull(rw, macA); err != nil {
		return fmt.Errorf("challenge: read proof: %w", err)
	}
	if idA != peer {
		return fmt.Errorf("%w: expected %q, the peer says it is %q", ErrPeer, peer, idA)
	}
	t := p.transcript(nonceD, nonceA, self, idA)
	if !hmac.Equal(macA, p.mac("acceptor", t)) {
		return ErrBadProof
	}
	if _, err := rw.Write(append(p.mac("dialer", t), then...)); err != nil {
		return fmt.Errorf("challenge: send proof: %w", err)
	}
	ack := make([]byte, 1)
	if _, err := io.ReadFull(rw, ack); err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if ack[0] != Accepted {
		return fmt.Errorf("%w (answer %#x)", ErrRefused, ack[0])
	}
	return nil
}

// Accept runs the acceptor's side: self is this end's id, allow says
// which dialer ids may prove themselves. It returns the dialer's id once
// the dialer's proof matched and the Accept byte was sent.
func Accept(rw io.ReadWriter, p Params, self string, allow func(id string) bool) (string, error) {
	if err := p.check(self); err != nil {
		return "", err
	}
	magic := make([]byte, MagicLen)
	if _, err := io.ReadFull(rw, magic); err != nil {
		return "", fmt.Errorf("challenge: read hello: %w", err)
	}
	if string(magic) != p.Magic {
		return "", fmt.Errorf("%w (first bytes %q)", ErrNotOurs, magic)
	}
	nonceD := make([]byte, NonceLen)
	if _, err := io.ReadFull(rw, nonceD); err != nil {
		return "", fmt.Errorf("challenge: read hello: %w", err)
	}
	idD, err := readID(rw)
	if err != nil {
		return "", err
	}
	if !allow(idD) {
		return "", fmt.Errorf("%w: %q is not allowed", ErrPeer, idD)
	}
	nonceA := make([]byte, NonceLen)
	if _, err := rand.Read(nonceA); err != nil {
		return "", fmt.Errorf("challenge: nonce: %w", err)
	}
	t := p.transcript(nonceD, nonceA, idD, self)
	msg := append(append(append(nonceA, byte(len(self))), self...), p.mac("acceptor", t)...)
	if _, err := rw.Write(msg); err != nil {
		return "", fmt.Errorf("challenge: send challenge: %w", err)
	}
	macD := make([]byte, MACLen)
	if _, err := io.ReadFull(rw, macD); err != nil {
		return "", fmt.Errorf("challenge: read proof: %w", err)
	}
	if !hmac.Equal(macD, p.mac("dialer", t)) {
		return "", fmt.Errorf("%w (from %q)", ErrBadProof, idD)
	}
	if _, err := rw.Write([]byte{Accepted}); err != nil {
		return "", fmt.Errorf("challenge: send accept: %w", err)
	}
	return idD, nil
}

// readID reads a length-prefixed id.
func readID(r io.Reader) (string, error) {
	n := make([]byte, 1)
	if _, err := io.ReadFull(r, n); err != nil {
		return "", fmt.Errorf("challenge: read id: %w", err)
	}
	id := make([]byte, n[0])
	if _, err := io.ReadFull(r, id); err != nil {
		return "", fmt.Errorf("challenge: read id: %w", err)
	}
	return string(id), nil
}
