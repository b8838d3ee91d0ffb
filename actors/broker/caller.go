package broker

import "net/netip"

// Protocol is the front door a call came through.
type Protocol uint8

// The front doors.
const (
	// ByBroker is the broker itself (a stage, a test, a tool).
	ByBroker Protocol = iota
	// Remoting is RocketMQ's remoting protocol (netloop/router).
	Remoting
	// GRPC is RocketMQ 5's gRPC protocol (netloop/grpcgw).
	GRPC
	// Console is the web console (cmd/internal/console).
	Console
)

// String names the protocol in logs and metric labels.
func (p Protocol) String() string {
	switch p {
	case ByBroker:
		return "broker"
	case Remoting:
		return "remoting"
	case GRPC:
		return "grpc"
	case Console:
		return "console"
	default:
		return "unknown"
	}
}

// Caller is who asks: every call carries one.
type Caller struct {
	// Protocol is the front door.
	Protocol Protocol
	// Account is the verified account ("": anonymous, or no ACL).
	Account string
	// Remote is the client's address as its connection shows it (for
	// BornHost, connection lists and ACL address rules).
	Remote netip.AddrPort
	// ClientID is the client's id when the protocol carries one.
	ClientID string
	// Checked says the codec already checked the request against the ACL
	// (the remoting router checks every request code before its handler
	// runs: router/authz.go); the API does not check it again.
	Checked bool
}
