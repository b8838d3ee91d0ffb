package controller

// The cluster-secret challenge of a raft connection (raftsec.go), run
// before raft's first byte, inside TLS when TLS is on too. It is
// actors/challenge's exchange with this protocol's magic and label (no
// channel binding):
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
// The acceptor takes idD only from the configured peers, the dialer only
// the id it dialed. The caller bounds the whole exchange with a deadline.

import (
	"fmt"
	"io"
	"slices"

	"github.com/wheelmq/wheelmq/actors/challenge"
)

const (
	secretMagic = "WMQRAFT1"
	secretLabel = "wheelmq-raft-v1"
	nonceLen    = challenge.NonceLen
	macLen      = challenge.MACLen
)

func secretParams(secret []byte) challenge.Params {
	return challenge.Params{Magic: secretMagic, Label: secretLabel, Secret: secret}
}

// secretClient runs the dialer's side: self is this node's id, peer the
// id dialed.
func secretClient(rw io.ReadWriter, secret []byte, self, peer string) error {
	if err := challenge.Dial(rw, secretParams(secret), self, peer, nil); err != nil {
		return fmt.Errorf("cluster secret: %w", err)
	}
	return nil
}

// secretServer runs the acceptor's side: self is this node's id, allowed
// the ids a dialer may prove. It returns the dialer's id.
func secretServer(rw io.ReadWriter, secret []byte, self string, allowed []string) (string, error) {
	id, err := challenge.Accept(rw, secretParams(secret), self, func(id string) bool { return slices.Contains(allowed, id) })
	if err != nil {
		return "", fmt.Errorf("cluster secret: %w", err)
	}
	return id, nil
}
