package ha

// Authentication of the HA stream (version 2; docs/formats.md, "HA
// stream"): before any frame, the replica (dialer) and the master
// (acceptor) run actors/challenge's exchange with ChallengeMagic and
// ChallengeLabel, keyed by the group's HA secret, bound to the TLS
// connection when there is one (TLSExporterLabel), with the ids
// ReplicaPeerID and MasterPeerID. The replica's Handshake frame follows
// its proof in the same write; the master reads it only after the proof
// matched. Whatever the master refuses before that (another protocol, a
// version 1 handshake, an id it does not take, a wrong proof) is answered
// with the same bytes, Refusal(), and the connection is closed: a stranger
// learns nothing of the log, not even the master's epoch.

import (
	"fmt"
	"strconv"
	"strings"
)

// Challenge constants of the HA stream (part of the wire format).
const (
	// ChallengeMagic opens the replica's hello.
	ChallengeMagic = "WMQHA\x00\x00\x02"
	// ChallengeLabel opens the challenge's transcript.
	ChallengeLabel = "wheelmq-ha-v2"
	// TLSExporterLabel is the label of the TLS exporter the proofs are
	// bound to inside TLS.
	TLSExporterLabel = "EXPORTER-wheelmq-ha-v2"
	// RefusalReason is the reason in Refusal.
	RefusalReason = "refused"
)

// MasterPeerID is the id a master proves: its group and the HA address
// it published to the controller (the one a replica dials), so that a
// replica sent to another address (a relay) finds the id does not match.
func MasterPeerID(group, haAddr string) string {
	return "master|" + group + "|" + haAddr
}

// ReplicaPeerID is the id a replica proves: its group and replica id.
func ReplicaPeerID(group string, replicaID int64) string {
	return "replica|" + group + "|" + strconv.FormatInt(replicaID, 10)
}

// ParseReplicaPeerID returns the replica id of a ReplicaPeerID of group.
func ParseReplicaPeerID(group, id string) (int64, error) {
	rest, ok := strings.CutPrefix(id, "replica|"+group+"|")
	if !ok {
		return 0, fmt.Errorf("ha: peer id %q is not a replica of %s", id, group)
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("ha: peer id %q: bad replica id", id)
	}
	return n, nil
}

// refusal is Refusal's bytes, encoded once.
var refusal = AppendFrame(nil, HandshakeReply{Reason: RefusalReason})

// Refusal is the one answer of a master to a connection it refuses before
// both ends are proven: a HandshakeReply refused with RefusalReason and
// every number zero (a version 1 replica reads it as a refusal, a version
// 2 one as a refused challenge). Callers must not modify it.
func Refusal() []byte { return refusal }
