package controller

import (
	"fmt"

	"github.com/wheelmq/wheelmq/actors/wirecode"
)

// controllerGroup is GET_METADATA_INFO's group (RocketMQ's DLedger group).
const controllerGroup = "wheelmq-controller"

// serve handles one request on the stage.
func (c *Controller) serve(req *request) {
	send := req.send
	if req.req.leaderOnly() && !c.IsLeader() {
		send(c.notLeader())
		return
	}
	switch r := req.req.(type) {
	case Malformed:
		send(refuse(r.Code, r.Remark))
	case MetadataRequest:
		send(c.metadata())
	case GetConfigRequest:
		send(served(ConfigView(c.configView()))) // each controller its own, leader or not (as Java's)
	case UpdateConfigRequest:
		if code, why := c.updateConfig(req.conn, r.Values); code != wirecode.Success {
			send(refuse(code, "controller: nothing changed: "+why))
			return
		}
		send(served(nil))
	case HeartbeatRequest:
		c.heartbeat(req, r.Heartbeat)
	case ApplyBrokerIDRequest:
		c.applyBrokerID(req, r)
	case NextBrokerIDRequest:
		g, _ := c.Group(r.Cluster, r.BrokerName)
		next := g.NextID
		if next == 0 {
			next = 1
		}
		send(served(NextBrokerID{Cluster: r.Cluster, BrokerName: r.BrokerName, Next: next}))
	case AlterRequest:
		c.alter(req, r)
	case ReplicaInfoRequest:
		g, ok := c.lookup(r.Cluster, r.BrokerName)
		if !ok {
			send(refuse(CodeBrokerMetadataNotExist, "controller: unknown broker group "+r.BrokerName))
			return
		}
		send(served(Role{Group: g}))
	case SyncStateDataRequest:
		send(served(c.syncStateData(r.BrokerNames)))
	case EpochCacheRequest:
		c.epochCache(req, r)
	case ElectRequest:
		c.electMaster(req, r)
	default:
		send(refuse(wirecode.RequestCodeNotSupported, fmt.Sprintf("controller: request %T not supported", r)))
	}
}

// lookup finds a group by cluster (optional: RocketMQ's controller
// headers carry only brokerName) and brokerName.
func (c *Controller) lookup(cluster, name string) (Group, bool) {
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
func (c *Controller) heartbeat(req *request, h Heartbeat) {
	conn, send := req.conn, req.send
	key := groupKey(h.Cluster, h.BrokerName)
	g, ok := c.Group(h.Cluster, h.BrokerName)
	if ok && h.ReplicaID > 0 {
		if r, known := g.Replicas[h.ReplicaID]; known && r.Addr == h.BrokerAddr && r.HAAddr == h.HAAddr {
			c.live.beat(key, h.ReplicaID, conn, c.cfg.Now(), h)
			send(served(Role{Group: g, ReplicaID: h.ReplicaID}))
			return
		}
	}
	c.apply(Command{Op: OpRegister, Cluster: h.Cluster, BrokerName: h.BrokerName, ReplicaID: h.ReplicaID, Addr: h.BrokerAddr, HAAddr: h.HAAddr}, req, func(r Result, err error) {
		if a, failed := applyFailed(r, err); failed {
			send(a)
			return
		}
		c.cfg.Logger.Info().Str("cluster", h.Cluster).Str("brokerName", h.BrokerName).Str("brokerAddr", h.BrokerAddr).
			Int64("replicaId", r.ReplicaID).Int64("master", r.Group.MasterID).Int64("epoch", r.Group.MasterEpoch).
			Msg("controller: broker registered")
		c.live.beat(key, r.ReplicaID, conn, c.cfg.Now(), h)
		send(served(Role{Group: r.Group, ReplicaID: r.ReplicaID}))
	})
}

// applyFailed turns a failed apply into its answer (false: success).
func applyFailed(r Result, err error) (Answer, bool) {
	if err != nil {
		return refuse(CodeNotLeader, "controller: not applied ("+err.Error()+"); retry with the leader"), true
	}
	if r.Code != 0 {
		return refuse(r.Code, "controller: "+r.Remark), true
	}
	return Answer{}, false
}

// applyBrokerID serves CONTROLLER_APPLY_BROKER_ID (1013); an id another
// broker holds is CodeBrokerIDInvalid.
func (c *Controller) applyBrokerID(req *request, a ApplyBrokerIDRequest) {
	send := req.send
	if g, ok := c.Group(a.Cluster, a.BrokerName); ok {
		if r, taken := g.Replicas[a.ID]; taken && r.Addr != a.Addr {
			send(refuse(CodeBrokerIDInvalid, fmt.Sprintf("controller: broker id %d is taken by %s", a.ID, r.Addr)))
			return
		}
	}
	c.apply(Command{Op: OpRegister, Cluster: a.Cluster, BrokerName: a.BrokerName, ReplicaID: a.ID, Addr: a.Addr}, req, func(r Result, err error) {
		if ans, failed := applyFailed(r, err); failed {
			send(ans)
			return
		}
		send(served(BrokerIDApplied{Cluster: a.Cluster, BrokerName: a.BrokerName}))
	})
}

// alter serves CONTROLLER_ALTER_SYNC_STATE_SET (1001).
func (c *Controller) alter(req *request, a AlterRequest) {
	send := req.send
	g, ok := c.lookup(a.Cluster, a.BrokerName)
	if !ok {
		send(refuse(CodeBrokerMetadataNotExist, "controller: unknown broker group "+a.BrokerName))
		return
	}
	c.apply(Command{Op: OpAlter, Cluster: g.Cluster, BrokerName: g.BrokerName, MasterID: a.MasterID, MasterEpoch: a.MasterEpoch,
		SyncStateSetEpoch: a.Set.SyncStateSetEpoch, Set: a.Set.SyncStateSet}, req, func(r Result, err error) {
		if ans, failed := applyFailed(r, err); failed {
			send(ans)
			return
		}
		c.cfg.Logger.Info().Str("brokerName", g.BrokerName).Ints64("syncStateSet", r.Group.SyncStateSet).
			Int64("syncStateSetEpoch", r.Group.SyncStateSetEpoch).Msg("controller: sync-state set altered")
		send(served(Role{Group: r.Group, ReplicaID: a.MasterID, Altered: true}))
	})
}

// electMaster serves CONTROLLER_ELECT_MASTER (1002, admin): brokerId > 0
// with designateElect names the new master (it must be an alive member of
// the sync-state set); otherwise the usual election runs, which keeps an
// alive master.
func (c *Controller) electMaster(req *request, e ElectRequest) {
	send := req.send
	g, ok := c.lookup(e.Cluster, e.BrokerName)
	if !ok {
		send(refuse(CodeBrokerMetadataNotExist, "controller: unknown broker group "+e.BrokerName))
		return
	}
	var designated int64
	if e.BrokerID > 0 {
		designated = e.BrokerID
	}
	key := groupKey(g.Cluster, g.BrokerName)
	c.apply(Command{Op: OpElect, Cluster: g.Cluster, BrokerName: g.BrokerName, Alive: c.live.candidates(key, c.cfg.Now()), Designated: designated}, req, func(r Result, err error) {
		if ans, failed := applyFailed(r, err); failed {
			send(ans)
			return
		}
		send(served(Elected{Group: r.Group}))
	})
}

// syncStateData serves CONTROLLER_GET_SYNC_STATE_DATA (1006) for the
// groups names lists (none: all).
func (c *Controller) syncStateData(names []string) BrokerReplicasInfo {
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
	return out
}

// epochCache serves GET_BROKER_EPOCH_CACHE (1007) from the controller's
// view: RocketMQ asks the broker itself (its epoch file); the controller
// knows only the current master epoch (one open entry from offset 0) and
// the master's last reported max offset. brokerName (and clusterName) are
// wheelmq's header additions.
func (c *Controller) epochCache(req *request, e EpochCacheRequest) {
	g, ok := c.lookup(e.Cluster, e.BrokerName)
	if !ok {
		req.send(refuse(CodeBrokerMetadataNotExist, "controller: GET_BROKER_EPOCH_CACHE needs the brokerName of a known group (the epoch file itself is the broker's)"))
		return
	}
	out := EpochEntryCache{ClusterName: g.Cluster, BrokerName: g.BrokerName, BrokerID: g.MasterID, EpochList: []EpochEntry{}}
	if g.MasterEpoch > 0 {
		out.EpochList = append(out.EpochList, EpochEntry{Epoch: g.MasterEpoch, StartOffset: 0, EndOffset: maxEnd})
	}
	if m := c.live.groups[groupKey(g.Cluster, g.BrokerName)][g.MasterID]; m != nil {
		out.MaxOffset = m.maxOffset
	}
	req.send(served(out))
}

// metadata serves CONTROLLER_GET_METADATA_INFO (1005) on every node.
func (c *Controller) metadata() Answer {
	_, id := c.node.r.LeaderWithID()
	return served(Metadata{Group: controllerGroup, LeaderID: string(id), LeaderAddr: c.LeaderRemotingAddr(),
		IsLeader: c.IsLeader(), Peers: c.cfg.peers()})
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
