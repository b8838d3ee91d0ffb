package router

// GET_BROKER_EPOCH_CACHE (1007, mqadmin getBrokerEpoch): a replicated
// broker's epoch file (<data>/ha/epochs) in RocketMQ 5's layout, as its
// AdminBrokerProcessor.getBrokerEpochCache answers: an EpochEntryCache body
// with clusterName, brokerName, brokerId (0 while master, else the replica
// id), the epochs oldest first (endOffset = the next one's start, the last
// open) and maxOffset, the CommitLog's end. A standalone broker answers
// SYSTEM_ERROR, as Java's does outside controller mode.

import (
	"encoding/json"

	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

func (r *Router) handleEpochCache(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	entries, ok := r.p.EpochEntries()
	if !ok {
		return refuse(remoting.SystemError, "GET_BROKER_EPOCH_CACHE is only for brokers in controller mode (--replication controller); this one is standalone")
	}
	epochs, starts := make([]int64, len(entries)), make([]int64, len(entries))
	for i, e := range entries {
		epochs[i], starts[i] = e.Epoch, e.Start
	}
	body, err := json.Marshal(adminbody.EpochEntryCache{
		ClusterName: r.cfg.Cluster, BrokerName: r.cfg.BrokerName, BrokerID: r.p.HA().Role.BrokerID,
		EpochList: adminbody.EpochList(epochs, starts), MaxOffset: r.store.CommitLog.MaxOffset(),
	})
	r.sendBody(c, cmd, body, err)
	return nil
}
