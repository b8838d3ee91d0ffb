package process

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/actors/controller/controllertest"
	"github.com/wheelmq/wheelmq/actors/controller/member"
	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestControllerInNamesrvFencesStaleMasterRegistration runs a name server
// with its controller, a broker member that becomes master (epoch 1) and
// dies (epoch 2, no master left), and checks that its REGISTER_BROKER as
// brokerId 0 at epoch 1 is refused while one at epoch 2 is taken; the
// admin reads answer on the same port.
func TestControllerInNamesrvFencesStaleMasterRegistration(t *testing.T) {
	dir := t.TempDir()
	raftAddr := controllertest.FreeAddr(t)
	n, err := Start(Config{NamesrvListen: "127.0.0.1:0", NamesrvDir: filepath.Join(dir, "namesrv"),
		Controller: controller.Config{Listen: raftAddr, Dir: filepath.Join(dir, "controller")}, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Stop(context.Background()) }()
	ns := n.NamesrvAddr()

	h := role.NewHolder(role.State{})
	m, err := member.Start(member.Options{Controllers: []string{ns}, Cluster: "c", BrokerName: "b", BrokerAddr: "127.0.0.1:10911",
		Dir: filepath.Join(dir, "broker"), Role: h, HeartbeatInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !h.Get().IsMaster() || h.Get().Kind != role.Master {
		if time.Now().After(deadline) {
			t.Fatalf("member not master: %+v", h.Get())
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, ns, remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for n.Controller().LeaderRemotingAddr() == "" && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond) // the leader's address is announced through raft
	}
	md, err := c.Invoke(ctx, remoting.NewRequest(remoting.ControllerGetMetadataInfo, nil, nil))
	if err != nil || md.Code != 0 || md.Field(controller.FieldIsLeader) != "true" || md.Field(controller.FieldLeaderAddress) != ns {
		t.Fatalf("metadata: %v %+v", err, md)
	}
	if err := m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		if e, _ := n.Controller().MasterEpoch("c", "b"); e == 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("master epoch did not move to 2 after the master died")
		}
		time.Sleep(10 * time.Millisecond)
	}
	register := func(epoch int64) *remoting.Command {
		req, err := namesrv.NewRegisterRequest(namesrv.BrokerInfo{Cluster: "c", BrokerName: "b", BrokerAddr: "127.0.0.1:10911"},
			nil, namesrv.DataVersion{StateVersion: epoch, Counter: 1})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Invoke(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := register(1); resp.Code != namesrv.CodeFencedMasterEpoch {
		t.Fatalf("stale master registration: %d %q", resp.Code, resp.Remark)
	}
	if resp := register(2); resp.Code != remoting.Success {
		t.Fatalf("current-epoch registration: %d %q", resp.Code, resp.Remark)
	}
	sd, err := c.Invoke(ctx, &remoting.Command{Code: remoting.ControllerGetSyncStateData, Language: "JAVA", Body: []byte(`["b"]`), ExtFields: map[string]string{}})
	var info controller.BrokerReplicasInfo
	if err != nil || sd.Code != 0 || json.Unmarshal(sd.Body, &info) != nil || info.ReplicasInfoTable["b"].MasterEpoch != 2 {
		t.Fatalf("sync state data: %v %+v %s", err, sd, sd.Body)
	}
}
