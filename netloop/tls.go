package netloop

// TLS on a gnet port. gnet has no TLS, and the handshake and the record
// layer must not run on an event loop, so a TLS connection is served by a
// goroutine of its own (tlssession.go) over an adapter (tlswire.go):
//
//   - OnTraffic sniffs the first byte of a connection: 0x16 (a TLS
//     handshake record) makes it a TLS connection, anything else a
//     plaintext one. Config.TLS.Mode decides which of the two the port
//     accepts; the other is closed at once, logged and counted.
//   - For a TLS connection OnTraffic only moves the bytes read into the
//     adapter's inbound buffer (bounded, see tlsInputCap) and wakes the
//     connection's goroutine, which runs crypto/tls over the adapter,
//     decodes frames from the plaintext and hands them to the same Handler
//     (FrameHandler first) as the event loop does for plaintext, one
//     connection's calls still serialized.
//   - Answers (Conn.Send and Outbox, from any goroutine) are queued as
//     plaintext and encrypted by tls.Conn.Write on the sending goroutine;
//     the ciphertext goes through the connection's ordinary outbox: written
//     straight to the socket when it takes it, else through the event loop.
//     The output caps (Config.MaxOutput, MaxOutputHard, StallTimeout)
//     count both, so they mean the same for TLS connections.
//   - The goroutine ends with the connection: OnClose closes the adapter,
//     and a handshake that does not complete within
//     TLS.HandshakeTimeout closes the connection. The Handler's OnClose
//     comes from that goroutine, after its last OnCommand.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"
)

// TLSMode selects what a port accepts (RocketMQ's tls.server.mode).
type TLSMode int

// The modes. The zero value is TLSDisabled.
const (
	// TLSDisabled serves plaintext only; a connection that opens with a
	// TLS client hello is closed.
	TLSDisabled TLSMode = iota
	// TLSPermissive serves TLS and plaintext on the same port, told apart
	// by the first byte (0x16 opens a TLS handshake).
	TLSPermissive
	// TLSEnforcing serves TLS only; a plaintext connection is closed.
	TLSEnforcing
)

// String is the mode's flag value: disabled, permissive or enforcing.
func (m TLSMode) String() string {
	switch m {
	case TLSDisabled:
		return "disabled"
	case TLSPermissive:
		return "permissive"
	case TLSEnforcing:
		return "enforcing"
	}
	return fmt.Sprintf("TLSMode(%d)", int(m))
}

// ParseTLSMode reads a mode's flag value (case-insensitive).
func ParseTLSMode(s string) (TLSMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "disabled":
		return TLSDisabled, nil
	case "permissive":
		return TLSPermissive, nil
	case "enforcing":
		return TLSEnforcing, nil
	}
	return TLSDisabled, fmt.Errorf("tls mode %q: want disabled, permissive or enforcing", s)
}

// DefaultHandshakeTimeout bounds a TLS handshake: a client that has not
// completed it by then is disconnected.
const DefaultHandshakeTimeout = 10 * time.Second

// TLS configures TLS on a port. The zero value is TLS disabled.
type TLS struct {
	// Mode selects what the port accepts.
	Mode TLSMode
	// Config is the server's TLS configuration (certificates, client
	// authentication, versions; GetConfigForClient may swap it per
	// handshake, for certificates reloaded while running). Required unless
	// Mode is TLSDisabled.
	Config *tls.Config
	// HandshakeTimeout bounds a handshake; zero means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
}

// TransportRefusal classifies a connection closed because it spoke the
// transport its port does not accept: a small fixed set, fit for a metric
// label.
type TransportRefusal int

// The refusals, in ServerStats.RefusedBy order.
const (
	// RefusedPlaintext: a plaintext connection on a port in TLSEnforcing.
	RefusedPlaintext TransportRefusal = iota
	// RefusedTLS: a TLS client hello on a port in TLSDisabled.
	RefusedTLS
	// NumTransportRefusals is the number of refusals.
	NumTransportRefusals
)

// String is the refusal's label: plaintext or tls.
func (r TransportRefusal) String() string {
	switch r {
	case RefusedPlaintext:
		return "plaintext"
	case RefusedTLS:
		return "tls"
	}
	return "unknown"
}

// ErrConnNotReady reports a Send on a connection whose transport is not
// known yet (on a port that takes TLS, until its first bytes arrived) or
// whose TLS handshake has not completed: nothing can be written to it
// yet. It wraps ErrConnClosed, as nothing sent now reaches the peer.
var ErrConnNotReady = fmt.Errorf("not ready (transport not known or TLS handshake not done): %w", ErrConnClosed)

// errTLSInputOverrun closes a TLS connection whose encrypted input piled
// up past tlsInputCap before its goroutine could decrypt it.
var errTLSInputOverrun = errors.New("netloop: TLS input not decrypted fast enough")

// tlsRecordHandshake is the first byte of a TLS handshake record, the
// first byte a TLS client sends.
const tlsRecordHandshake = 0x16

// transport is what a connection speaks, once its first bytes told.
type transport uint8

const (
	transportUnknown transport = iota
	transportPlain
	transportTLS
)

// tlsInputCap bounds the encrypted bytes of a TLS connection read from its
// socket and not yet taken by its goroutine (which holds at most as many
// more, taken and not yet decrypted): four of the largest frames, at least
// 16 MiB. The goroutine normally keeps up with the event loop; a
// connection that gets this far ahead is closed (logged and counted).
func tlsInputCap(maxFrame int) int { return max(4*maxFrame, 16<<20) }

// validateTLS checks a server's TLS configuration.
func validateTLS(t TLS) error {
	switch t.Mode {
	case TLSDisabled:
		return nil
	case TLSPermissive, TLSEnforcing:
		if t.Config == nil {
			return fmt.Errorf("tls mode %s needs a TLS configuration", t.Mode)
		}
		return nil
	}
	return fmt.Errorf("unknown %v", t.Mode)
}
