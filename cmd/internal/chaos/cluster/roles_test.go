package cluster

import (
	"testing"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestMasterAddr reads a real name server's GET_BROKER_CLUSTER_INFO: a
// standalone broker is its group's brokerId 0; an unknown group has none.
func TestMasterAddr(t *testing.T) {
	const name = "broker-chaos"
	n := processtest.Start(t, processtest.Options{Mutate: func(c *pipeline.Config) { c.BrokerName = name }})
	addr, err := MasterAddr(n.NamesrvAddr(), name)
	if err != nil {
		t.Fatal(err)
	}
	if addr != n.BrokerAddr() {
		t.Fatalf("master of %s: %q, want %q", name, addr, n.BrokerAddr())
	}
	if addr, err := MasterAddr(n.NamesrvAddr(), "no-such-group"); err != nil || addr != "" {
		t.Fatalf("unknown group: %q %v", addr, err)
	}
	g := &Group{Name: name}
	if g.byAddr(addr) != nil {
		t.Fatal("byAddr found a broker in an empty group")
	}
}
