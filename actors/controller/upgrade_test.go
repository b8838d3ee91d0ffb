package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/actors/controller/raftstore"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/portres"
)

// TestStartConvertsRaftDB: a controller directory an earlier version left
// (raft.db from raft-boltdb: the bootstrap configuration and a committed
// register) starts, is converted, and the group is there.
func TestStartConvertsRaftDB(t *testing.T) {
	addr := portres.Hold(t) // the controller's raft port, held by the test
	dir := filepath.Join(t.TempDir(), "controller")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bolt, err := raftboltdb.NewBoltStore(filepath.Join(dir, controller.RaftDBFile))
	if err != nil {
		t.Fatal(err)
	}
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(addr), Address: raft.ServerAddress(addr)}}}
	cmd, _ := json.Marshal(controller.Command{Op: controller.OpRegister, Cluster: "c", BrokerName: "b", Addr: "10.0.0.1:10911"})
	if err := bolt.StoreLogs([]*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(conf)},
		{Index: 2, Term: 1, Type: raft.LogCommand, Data: cmd},
	}); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(bolt.SetUint64([]byte("CurrentTerm"), 1), bolt.Close()); err != nil {
		t.Fatal(err)
	}

	c, err := controller.Start(controller.Config{Listen: addr, Security: controller.RaftSecurity{Loopback: netloop.LoopbackListen}, Dir: dir, Logger: zerolog.New(zerolog.NewTestWriter(t))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if g, ok := c.Group("c", "b"); ok {
			if g.MasterID != 1 || g.MasterEpoch != 1 || g.Replicas[1].Addr != "10.0.0.1:10911" {
				t.Fatalf("group after the upgrade: %+v", g)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the register stored in raft.db was not applied after the upgrade")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, name := range []string{raftstore.LogFile, raftstore.StableFile, raftstore.BoltMigratedFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("after the upgrade: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, controller.RaftDBFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("raft.db still in place: %v", err)
	}
}
