package controller

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
)

// controllerGroup is GET_METADATA_INFO's group (RocketMQ's DLedger group).
const controllerGroup = "wheelmq-controller"

// serve handles one request on the stage.
func (c *Controller) serve(req *request) {
	cmd, send := req.cmd, req.send
	switch cmd.Code {
	case remoting.ControllerGetMetadataInfo:
		send(c.metadata(cmd))
		return
	case remoting.GetControllerConfig, remoting.UpdateControllerConfig:
		send(c.runtimeConfig(req)) // each controller its own, leader or not (as Java's)
		return
	}
	if !c.IsLeader() {
		send(c.notLeader(cmd))
		return
	}
	switch cmd.Code {
	case remoting.BrokerHeartbeat:
		c.heartbeat(req)
	case remoting.ControllerRegisterBroker:
		c.registerBroker(req)
	case remoting.ControllerApplyBrokerID:
		c.applyBrokerID(req)
	case remoting.ControllerGetNextBrokerID:
		g, _ := c.Group(cmd.Field(FieldClusterName), cmd.Field(FieldBrokerName))
		next := g.NextID
		if next == 0 {
			next = 1
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.ExtFields = map[string]string{FieldClusterName: cmd.Field(FieldClusterName), FieldBrokerName: cmd.Field(FieldBrokerName), FieldNextBrokerID: strconv.FormatInt(next, 10)}
		send(resp)
	case remoting.ControllerAlterSyncStateSet:
		c.alter(req)
	case remoting.ControllerGetReplicaInfo:
		g, ok := c.lookup(cmd)
		if !ok {
			send(remoting.NewResponse(cmd, CodeBrokerMetadataNotExist, "controller: unknown broker group "+cmd.Field(FieldBrokerName)))
			return
		}
		send(roleResponse(cmd, g, 0))
	case remoting.ControllerGetSyncStateData:
		c.syncStateData(req)
	case remoting.GetBrokerEpochCache:
		c.epochCache(req)
	case remoting.ControllerElectMaster:
		c.electMaster(req)
	default:
		send(remoting.NewResponse(cmd, remoting.RequestCodeNotSupported, fmt.Sprintf("controller: request code %d not supported", cmd.Code)))
	}
}

// maxConfigBody bounds an UPDATE_CONTROLLER_CONFIG body (a few keys).
const maxConfigBody = 64 << 10

// runtimeConfig serves GET_CONTROLLER_CONFIG (1010) and
// UPDATE_CONTROLLER_CONFIG (1009): properties text both ways
// (runtimeconfig.go).
func (c *Controller) runtimeConfig(req *request) *remoting.Command {
	cmd := req.cmd
	if cmd.Code == remoting.GetControllerConfig {
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.Body = javaprops.Encode(c.configView())
		return resp
	}
	if len(cmd.Body) > maxConfigBody {
		return remoting.NewResponse(cmd, remoting.InvalidParameter, fmt.Sprintf("controller: nothing changed: the body holds %d bytes, more than %d", len(cmd.Body), maxConfigBody))
	}
	entries, err := javaprops.Parse(cmd.Body)
	if err != nil {
		return remoting.NewResponse(cmd, remoting.InvalidParameter, "controller: nothing changed: the body is not Java properties text: "+err.Error())
	}
	values := make(map[string]string, len(entries))
	for _, e := range entries {
		values[e.Key] = strings.TrimSpace(e.Value) // as mqadmin and properties2Object trim
	}
	if code, why := c.updateConfig(req.conn, values); code != remoting.Success {
		return remoting.NewResponse(cmd, code, "controller: nothing changed: "+why)
	}
	return remoting.NewResponse(cmd, remoting.Success, "")
}

// lookup finds the request's group by clusterName (optional: RocketMQ's
// controller headers carry only brokerName) and brokerName.
func (c *Controller) lookup(cmd *remoting.Command) (Group, bool) {
	cluster, name := cmd.Field(FieldClusterName), cmd.Field(FieldBrokerName)
	var g Group
	var ok bool
	c.fsm.View(func(s *State) {
		if cluster != "" {
			g, ok = s.Group(cluster, name)
			return
		}
		for _, cand := range s.Groups {
			if cand.BrokerName == name {
				g, ok = cand.clone(), true
				return
			}
		}
	})
	return g, ok
}

// heartbeat renews a broker's lease and tells it its role; a broker the
// group does not know yet (or whose addresses changed) is registered
// through raft first.
func (c *Controller) heartbeat(req *request) {
	cmd, conn, send := req.cmd, req.conn, req.send
	h, err := ParseHeartbeat(cmd)
	if err != nil {
		send(remoting.NewResponse(cmd, CodeInvalidRequest, "controller: "+err.Error()))
		return
	}
	key := groupKey(h.Cluster, h.BrokerName)
	g, ok := c.Group(h.Cluster, h.BrokerName)
	if ok && h.ReplicaID > 0 {
		if r, known := g.Replicas[h.ReplicaID]; known && r.Addr == h.BrokerAddr && r.HAAddr == h.HAAddr {
			c.live.beat(key, h.ReplicaID, conn, c.cfg.Now(), h)
			send(roleResponse(cmd, g, h.ReplicaID))
			return
		}
	}
	c.apply(Command{Op: OpRegister, Cluster: h.Cluster, BrokerName: h.BrokerName, ReplicaID: h.ReplicaID, Addr: h.BrokerAddr, HAAddr: h.HAAddr}, req, func(r Result, err error) {
		if resp := c.applyFailed(cmd, r, err); resp != nil {
			send(resp)
			return
		}
		c.cfg.Logger.Info().Str("cluster", h.Cluster).Str("brokerName", h.BrokerName).Str("brokerAddr", h.BrokerAddr).
			Int64("replicaId", r.ReplicaID).Int64("master", r.Group.MasterID).Int64("epoch", r.Group.MasterEpoch).
			Msg("controller: broker registered")
		c.live.beat(key, r.ReplicaID, conn, c.cfg.Now(), h)
		send(roleResponse(cmd, r.Group, r.ReplicaID))
	})
}

// applyFailed turns a failed apply into its answer (nil: success).
func (c *Controller) applyFailed(cmd *remoting.Command, r Result, err error) *remoting.Command {
	if err != nil {
		return remoting.NewResponse(cmd, CodeNotLeader, "controller: not applied ("+err.Error()+"); retry with the leader")
	}
	if r.Code != 0 {
		return remoting.NewResponse(cmd, r.Code, "controller: "+r.Remark)
	}
	return nil
}

// registerBroker serves CONTROLLER_REGISTER_BROKER (1003): the broker's id
// is confirmed and the group's role state answered.
func (c *Controller) registerBroker(req *request) {
	cmd, send := req.cmd, req.send
	_, err := optInt(cmd, FieldBrokerID)
	addr := cmd.Field(FieldBrokerAddress)
	if err != nil || addr == "" || cmd.Field(FieldBrokerName) == "" {
		send(remoting.NewResponse(cmd, CodeInvalidRequest, "controller: register needs brokerName, brokerAddress and a numeric brokerId"))
		return
	}
	cmd.SetField(FieldBrokerAddr, addr)
	c.heartbeat(req)
}

// applyBrokerID serves CONTROLLER_APPLY_BROKER_ID (1013): registerCheckCode
// is "brokerAddr;timestamp" as RocketMQ's broker sends it.
func (c *Controller) applyBrokerID(req *request) {
	cmd, send := req.cmd, req.send
	id, err := optInt(cmd, FieldAppliedBrokerID)
	addr, _, _ := strings.Cut(cmd.Field(FieldRegisterCheckCode), ";")
	if err != nil || id <= 0 || addr == "" {
		send(remoting.NewResponse(cmd, CodeInvalidRequest, "controller: apply broker id needs appliedBrokerId >= 1 and registerCheckCode addr;time"))
		return
	}
	cluster, name := cmd.Field(FieldClusterName), cmd.Field(FieldBrokerName)
	if g, ok := c.Group(cluster, name); ok {
		if r, taken := g.Replicas[id]; taken && r.Addr != addr {
			send(remoting.NewResponse(cmd, 2014, fmt.Sprintf("controller: broker id %d is taken by %s", id, r.Addr)))
			return
		}
	}
	c.apply(Command{Op: OpRegister, Cluster: cluster, BrokerName: name, ReplicaID: id, Addr: addr}, req, func(r Result, err error) {
		if resp := c.applyFailed(cmd, r, err); resp != nil {
			send(resp)
			return
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.ExtFields = map[string]string{FieldClusterName: cluster, FieldBrokerName: name}
		send(resp)
	})
}

// alter serves CONTROLLER_ALTER_SYNC_STATE_SET (1001).
func (c *Controller) alter(req *request) {
	cmd, send := req.cmd, req.send
	mid, err1 := optInt(cmd, FieldMasterBrokerID)
	mep, err2 := optInt(cmd, FieldMasterEpoch)
	body, err3 := DecodeSyncStateSet(cmd.Body)
	if err1 != nil || err2 != nil || err3 != nil {
		send(remoting.NewResponse(cmd, CodeInvalidRequest, "controller: alter sync-state set: bad header or body"))
		return
	}
	g, ok := c.lookup(cmd)
	if !ok {
		send(remoting.NewResponse(cmd, CodeBrokerMetadataNotExist, "controller: unknown broker group "+cmd.Field(FieldBrokerName)))
		return
	}
	c.apply(Command{Op: OpAlter, Cluster: g.Cluster, BrokerName: g.BrokerName, MasterID: mid, MasterEpoch: mep,
		SyncStateSetEpoch: body.SyncStateSetEpoch, Set: body.SyncStateSet}, req, func(r Result, err error) {
		if resp := c.applyFailed(cmd, r, err); resp != nil {
			send(resp)
			return
		}
		c.cfg.Logger.Info().Str("brokerName", g.BrokerName).Ints64("syncStateSet", r.Group.SyncStateSet).
			Int64("syncStateSetEpoch", r.Group.SyncStateSetEpoch).Msg("controller: sync-state set altered")
		resp := roleResponse(cmd, r.Group, mid)
		resp.ExtFields[FieldNewSyncStateSetEpoch] = strconv.FormatInt(r.Group.SyncStateSetEpoch, 10)
		send(resp)
	})
}

// electMaster serves CONTROLLER_ELECT_MASTER (1002, admin): brokerId > 0
// with designateElect names the new master (it must be an alive member of
// the sync-state set); otherwise the usual election runs, which keeps an
// alive master.
func (c *Controller) electMaster(req *request) {
	cmd, send := req.cmd, req.send
	g, ok := c.lookup(cmd)
	if !ok {
		send(remoting.NewResponse(cmd, CodeBrokerMetadataNotExist, "controller: unknown broker group "+cmd.Field(FieldBrokerName)))
		return
	}
	id, _ := optInt(cmd, FieldBrokerID)
	var designated int64
	if id > 0 {
		designated = id
	}
	key := groupKey(g.Cluster, g.BrokerName)
	c.apply(Command{Op: OpElect, Cluster: g.Cluster, BrokerName: g.BrokerName, Alive: c.live.candidates(key, c.cfg.Now()), Designated: designated}, req, func(r Result, err error) {
		if resp := c.applyFailed(cmd, r, err); resp != nil {
			send(resp)
			return
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		m := r.Group.Master()
		resp.ExtFields = map[string]string{
			FieldMasterBrokerID: strconv.FormatInt(r.Group.MasterID, 10), FieldMasterAddress: m.Addr,
			FieldMasterEpoch: strconv.FormatInt(r.Group.MasterEpoch, 10), FieldSyncStateSetEpoch: strconv.FormatInt(r.Group.SyncStateSetEpoch, 10),
		}
		bm := BrokerMemberGroup{Cluster: r.Group.Cluster, BrokerName: r.Group.BrokerName, BrokerAddrs: map[int64]string{}}
		for rid, rep := range r.Group.Replicas {
			bm.BrokerAddrs[rid] = rep.Addr
		}
		resp.Body, _ = json.Marshal(bm)
		send(resp)
	})
}

// syncStateData serves CONTROLLER_GET_SYNC_STATE_DATA (1006).
func (c *Controller) syncStateData(req *request) {
	cmd, send := req.cmd, req.send
	names, err := DecodeBrokerNames(cmd.Body)
	if err != nil {
		send(remoting.NewResponse(cmd, CodeInvalidRequest, "controller: "+err.Error()))
		return
	}
	now := c.cfg.Now()
	out := BrokerReplicasInfo{ReplicasInfoTable: map[string]ReplicasInfo{}}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var groups []Group
	c.fsm.View(func(s *State) {
		for _, g := range s.Groups {
			if len(want) == 0 || want[g.BrokerName] {
				groups = append(groups, g.clone())
			}
		}
	})
	for _, g := range groups {
		key := groupKey(g.Cluster, g.BrokerName)
		ri := ReplicasInfo{MasterBrokerID: g.MasterID, MasterAddress: g.Master().Addr, MasterEpoch: g.MasterEpoch,
			SyncStateSetEpoch: g.SyncStateSetEpoch, InSyncReplicas: []ReplicaIdentity{}, NotInSyncReplicas: []ReplicaIdentity{}}
		for _, id := range sortedIDs(g.Replicas) {
			alive, _ := c.live.alive(key, id, now)
			ident := ReplicaIdentity{BrokerName: g.BrokerName, BrokerID: id, BrokerAddress: g.Replicas[id].Addr, Alive: alive}
			if containsID(g.SyncStateSet, id) {
				ri.InSyncReplicas = append(ri.InSyncReplicas, ident)
			} else {
				ri.NotInSyncReplicas = append(ri.NotInSyncReplicas, ident)
			}
		}
		out.ReplicasInfoTable[g.BrokerName] = ri
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	resp.Body, _ = json.Marshal(out)
	send(resp)
}

// epochCache serves GET_BROKER_EPOCH_CACHE (1007) from the controller's
// view: RocketMQ asks the broker itself (its epoch file); the controller
// knows only the current master epoch (one open entry from offset 0) and
// the master's last reported max offset. brokerName (and clusterName) are
// wheelmq's header additions.
func (c *Controller) epochCache(req *request) {
	cmd, send := req.cmd, req.send
	g, ok := c.lookup(cmd)
	if !ok {
		send(remoting.NewResponse(cmd, CodeBrokerMetadataNotExist, "controller: GET_BROKER_EPOCH_CACHE needs the brokerName of a known group (the epoch file itself is the broker's)"))
		return
	}
	out := EpochEntryCache{ClusterName: g.Cluster, BrokerName: g.BrokerName, BrokerID: g.MasterID, EpochList: []EpochEntry{}}
	if g.MasterEpoch > 0 {
		out.EpochList = append(out.EpochList, EpochEntry{Epoch: g.MasterEpoch, StartOffset: 0, EndOffset: maxEnd})
	}
	if m := c.live.groups[groupKey(g.Cluster, g.BrokerName)][g.MasterID]; m != nil {
		out.MaxOffset = m.maxOffset
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	resp.Body, _ = json.Marshal(out)
	send(resp)
}

// metadata serves CONTROLLER_GET_METADATA_INFO (1005) on every node.
func (c *Controller) metadata(cmd *remoting.Command) *remoting.Command {
	_, id := c.node.r.LeaderWithID()
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	resp.ExtFields = map[string]string{
		FieldGroup: controllerGroup, FieldLeaderID: string(id), FieldLeaderAddress: c.LeaderRemotingAddr(),
		FieldIsLeader: strconv.FormatBool(c.IsLeader()), FieldPeers: strings.Join(c.cfg.peers(), ";"),
	}
	return resp
}

func sortedIDs(m map[int64]Replica) []int64 {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	return sortedUnique(ids)
}

func containsID(set []int64, id int64) bool {
	for _, v := range set {
		if v == id {
			return true
		}
	}
	return false
}
