package process

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/actors/controller/member"
	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/netloop/ctlwire"
	"github.com/wheelmq/wheelmq/netloop/nsrvcodec"
	"github.com/wheelmq/wheelmq/netloop/portres"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestControllerInNamesrvFencesStaleMasterRegistration runs a name server
// with its controller, a broker member that becomes master (epoch 1) and
// dies (epoch 2, no master left), and checks that its REGISTER_BROKER as
// brokerId 0 at epoch 1 is refused while one at epoch 2 is taken; the
// admin reads answer on the same port.
func TestControllerInNamesrvFencesStaleMasterRegistration(t *testing.T) {
	t.Parallel() // its own broker or controller; waits more than it computes
	dir := t.TempDir()
	raftAddr := portres.Hold(t)
	n, err := Start(Config{NamesrvListen: "127.0.0.1:0", NamesrvDir: filepath.Join(dir, "namesrv"),
		Controller: controller.Config{Listen: raftAddr, Dir: filepath.Join(dir, "controller")}, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Stop(context.Background()) }()
	ns := n.NamesrvAddr()
	// An unauthenticated (loopback) raft port is a warning on /healthz.
	var health strings.Builder
	n.writeControllerSecurity(&health)
	if !strings.Contains(health.String(), "warning: controller raft port "+raftAddr+" is unauthenticated") {
		t.Fatalf("healthz lines %q", health.String())
	}

	h := role.NewHolder(role.State{})
	m, err := member.Start(member.Options{Dial: ctlwire.Dialer(remoting.ClientOptions{}), Controllers: []string{ns}, Cluster: "c", BrokerName: "b", BrokerAddr: "127.0.0.1:10911",
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
	if err != nil || md.Code != 0 || md.Field(ctlwire.FieldIsLeader) != "true" || md.Field(ctlwire.FieldLeaderAddress) != ns {
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
		req, err := nsrvcodec.NewRegisterRequest(namesrv.BrokerInfo{Cluster: "c", BrokerName: "b", BrokerAddr: "127.0.0.1:10911"},
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
	// The controller served all this as the process's stage "controller".
	if got := stageCounter(t, n, "wheelmq_actor_messages_total", controller.StageName); got < 5 {
		t.Fatalf(`wheelmq_actor_messages_total{stage="controller"} = %v, want >= 5`, got)
	}
}

// stageCounter reads a counter of the process's registry by its stage
// label (-1: no such series).
func stageCounter(t *testing.T, n *Node, name, stageName string) float64 {
	t.Helper()
	mfs, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" && l.GetValue() == stageName {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

// TestThreeNameServersWithControllers runs three name servers whose
// controllers form one raft group: a broker member finds the leader
// through any of them (CONTROLLER_NOT_LEADER redirects to the leader's
// name-server port), and stays master when the leader's process stops.
func TestThreeNameServersWithControllers(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	dir := t.TempDir()
	var peers []string
	for i := 0; i < 3; i++ {
		peers = append(peers, portres.Hold(t))
	}
	nodes := make([]*Node, 3)
	var addrs []string
	for i := range nodes {
		d := filepath.Join(dir, strconv.Itoa(i))
		n, err := Start(Config{NamesrvListen: "127.0.0.1:0", NamesrvDir: filepath.Join(d, "namesrv"),
			Controller: controller.Config{Listen: peers[i], Peers: peers, Dir: filepath.Join(d, "controller")}, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
		addrs = append(addrs, n.NamesrvAddr())
	}
	defer func() {
		for _, n := range nodes {
			if n != nil {
				_ = n.Stop(context.Background())
			}
		}
	}()
	h := role.NewHolder(role.State{})
	// The member knows the name servers in reverse order: likely a
	// follower first.
	m, err := member.Start(member.Options{Dial: ctlwire.Dialer(remoting.ClientOptions{}), Controllers: []string{addrs[2], addrs[1], addrs[0]}, Cluster: "c", BrokerName: "b",
		BrokerAddr: "127.0.0.1:10911", Dir: filepath.Join(dir, "broker"), Role: h})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Stop(context.Background()) }()
	waitFor := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v (role %+v)", what, d, h.Get())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("member master", 15*time.Second, func() bool { return h.Get().Kind == role.Master && h.Get().IsMaster() })
	leader := -1
	for i, n := range nodes {
		if n.Controller().IsLeader() {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no leader")
	}
	if err := nodes[leader].Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	nodes[leader] = nil
	waitFor("new leader", 10*time.Second, func() bool {
		for _, n := range nodes {
			if n != nil && n.Controller().IsLeader() {
				return true
			}
		}
		return false
	})
	time.Sleep(member.DefaultLease + 500*time.Millisecond)
	if st := h.Get(); st.Kind != role.Master || st.Fenced || st.Epoch != 1 {
		t.Fatalf("after the controller failover: %+v", st)
	}
}
