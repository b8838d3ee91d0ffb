package ha

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// TestRefusalIsFixed: the refusal is the documented constant bytes
// (docs/formats.md) and tells nothing: no epoch, no offset, no epochs.
func TestRefusalIsFixed(t *testing.T) {
	want, _ := hex.DecodeString("000000230200000772656675736564000000000000000000000000000000000000000098317a9f")
	if !bytes.Equal(Refusal(), want) {
		t.Fatalf("refusal %x, want %x", Refusal(), want)
	}
	f, err := Decode(Refusal())
	if err != nil {
		t.Fatal(err)
	}
	if r := f.(HandshakeReply); r.OK || r.MasterEpoch != 0 || r.MaxOffset != 0 || r.Epochs != nil || r.Reason != RefusalReason {
		t.Fatalf("refusal %+v", r)
	}
}

func TestPeerIDs(t *testing.T) {
	id, err := ParseReplicaPeerID("c/b", ReplicaPeerID("c/b", 3))
	if err != nil || id != 3 {
		t.Fatalf("round trip: %d %v", id, err)
	}
	for _, bad := range []string{ReplicaPeerID("c/b2", 3), ReplicaPeerID("c/b", 0), "replica|c/b|-1", "replica|c/b|x",
		MasterPeerID("c/b", "1.2.3.4:5"), ""} {
		if _, err := ParseReplicaPeerID("c/b", bad); err == nil {
			t.Fatalf("%q taken as a replica of c/b", bad)
		}
	}
}
