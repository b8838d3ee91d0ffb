package ctlwire

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
)

// Encode turns the controller's answer to req into its remoting response:
// the code and remark, and the result's header fields and body as
// RocketMQ's controller answers carry them.
func Encode(req *remoting.Command, a controller.Answer) *remoting.Command {
	resp := remoting.NewResponse(req, a.Code, a.Remark)
	switch r := a.Result.(type) {
	case controller.NotLeader:
		resp.ExtFields[FieldLeaderAddress] = r.LeaderAddr
	case controller.Role:
		encodeRole(resp, r.Group, r.ReplicaID)
		if r.Altered {
			resp.ExtFields[FieldNewSyncStateSetEpoch] = strconv.FormatInt(r.Group.SyncStateSetEpoch, 10)
		}
	case controller.NextBrokerID:
		resp.ExtFields = map[string]string{FieldClusterName: r.Cluster, FieldBrokerName: r.BrokerName, FieldNextBrokerID: strconv.FormatInt(r.Next, 10)}
	case controller.BrokerIDApplied:
		resp.ExtFields = map[string]string{FieldClusterName: r.Cluster, FieldBrokerName: r.BrokerName}
	case controller.Elected:
		g := r.Group
		resp.ExtFields = map[string]string{
			FieldMasterBrokerID: strconv.FormatInt(g.MasterID, 10), FieldMasterAddress: g.Master().Addr,
			FieldMasterEpoch: strconv.FormatInt(g.MasterEpoch, 10), FieldSyncStateSetEpoch: strconv.FormatInt(g.SyncStateSetEpoch, 10),
		}
		bm := controller.BrokerMemberGroup{Cluster: g.Cluster, BrokerName: g.BrokerName, BrokerAddrs: map[int64]string{}}
		for rid, rep := range g.Replicas {
			bm.BrokerAddrs[rid] = rep.Addr
		}
		resp.Body, _ = json.Marshal(bm)
	case controller.BrokerReplicasInfo:
		resp.Body, _ = json.Marshal(r)
	case controller.EpochEntryCache:
		resp.Body, _ = json.Marshal(r)
	case controller.Metadata:
		resp.ExtFields = map[string]string{
			FieldGroup: r.Group, FieldLeaderID: r.LeaderID, FieldLeaderAddress: r.LeaderAddr,
			FieldIsLeader: strconv.FormatBool(r.IsLeader), FieldPeers: strings.Join(r.Peers, ";"),
		}
	case controller.ConfigView:
		resp.Body = javaprops.Encode(r)
	}
	return resp
}

// encodeRole writes group g's role state for replica id into resp: the
// header fields and the SyncStateSet body.
func encodeRole(resp *remoting.Command, g controller.Group, id int64) {
	m := g.Master()
	resp.ExtFields = map[string]string{
		FieldClusterName: g.Cluster, FieldBrokerName: g.BrokerName,
		FieldBrokerID: strconv.FormatInt(id, 10), FieldMasterBrokerID: strconv.FormatInt(g.MasterID, 10),
		FieldMasterAddress: m.Addr, FieldMasterHAAddress: m.HAAddr,
		FieldMasterEpoch: strconv.FormatInt(g.MasterEpoch, 10), FieldSyncStateSetEpoch: strconv.FormatInt(g.SyncStateSetEpoch, 10),
	}
	set := g.SyncStateSet
	if set == nil {
		set = []int64{}
	}
	resp.Body, _ = json.Marshal(controller.SyncStateSetBody{SyncStateSet: set, SyncStateSetEpoch: g.SyncStateSetEpoch})
}
