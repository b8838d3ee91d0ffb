package broker

// Cluster information: the brokers the name servers know (RocketMQ's
// GET_BROKER_CLUSTER_INFO), each with its role and version: this broker's
// from its own state, the others' from their registrations and, where the
// lookup can ask them, their runtime figures.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/role"
)

// VersionDesc is the RocketMQ version the broker answers as (MQVersion's
// name of remoting.BrokerVersion).
const VersionDesc = "V5_3_3"

// ClusterLookup reads what the name servers know of the cluster, and a
// broker's runtime figures (GET_BROKER_RUNTIME_INFO's table) where they
// can be had. The process implements it: the embedded name server's
// table in process, or its name servers over the network.
type ClusterLookup interface {
	// LookUpCluster answers the brokers the name servers know.
	LookUpCluster(ctx context.Context) (*namesrv.ClusterInfo, error)
	// BrokerRuntime answers another broker's runtime table.
	BrokerRuntime(ctx context.Context, addr string) (map[string]string, error)
	// DeleteTopicRoute removes a topic from every name server's routes.
	DeleteTopicRoute(ctx context.Context, topic string) error
}

// clusterState holds the lookup ServeCluster set.
type clusterState struct {
	lookup atomic.Pointer[ClusterLookup]
}

// ServeCluster makes Cluster answer the brokers lookup finds (without it,
// this broker alone). Safe from any goroutine.
func (b *Broker) ServeCluster(lookup ClusterLookup) { b.cluster.lookup.Store(&lookup) }

// ClusterMember is one broker of the cluster.
type ClusterMember struct {
	Cluster, Name string
	// ID is the broker's id in its group's registration (0: master).
	ID   int64
	Addr string
	// GRPCEndpoint is the gRPC endpoint it registered ("": none).
	GRPCEndpoint string
	// Self marks this broker.
	Self bool
	// Role is its role as every view names it (role.Name).
	Role string
	// Version is the RocketMQ version it answers as ("" when unknown).
	Version string
	// Epoch and SyncStateSet are the replication state of a replicated
	// broker (zero, nil: none or unknown).
	Epoch        int64
	SyncStateSet []int64
	// Error says why its runtime figures are unknown ("": they are not).
	Error string
}

// ClusterView is the cluster as the name servers know it, sorted by
// cluster, name and id.
type ClusterView struct {
	Members []ClusterMember
	// Error says why the name servers could not be asked ("": they
	// were); Members then holds this broker alone.
	Error string
}

// Cluster answers the brokers of the cluster (the broker's configuration:
// admin). It asks the name servers and the other brokers, so it blocks
// (within ctx): not for an event loop.
func (b *Broker) Cluster(ctx context.Context, c Caller) (*ClusterView, error) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Sub}); err != nil {
		return nil, err
	}
	self := b.selfMember()
	v := &ClusterView{}
	lp := b.cluster.lookup.Load()
	if lp == nil {
		v.Members = []ClusterMember{self}
		return v, nil
	}
	lookup := *lp
	info, err := lookup.LookUpCluster(ctx)
	if err != nil {
		v.Error = fmt.Sprintf("name servers: %v", err)
		v.Members = []ClusterMember{self}
		return v, nil
	}
	found := false
	for _, bd := range info.BrokerAddrTable {
		for id, addr := range bd.BrokerAddrs {
			m := ClusterMember{Cluster: bd.Cluster, Name: bd.BrokerName, ID: id, Addr: addr, GRPCEndpoint: bd.GRPCEndpoints[id]}
			if addr == self.Addr {
				found = true
				self.Cluster, self.Name, self.ID, self.GRPCEndpoint = m.Cluster, m.Name, id, m.GRPCEndpoint
				self.Role = b.selfRole(id)
				v.Members = append(v.Members, self)
				continue
			}
			v.Members = append(v.Members, b.otherMember(ctx, lookup, m))
		}
	}
	if !found {
		v.Members = append(v.Members, self) // not (or no longer) registered
	}
	slices.SortFunc(v.Members, func(x, y ClusterMember) int {
		return cmp.Or(cmp.Compare(x.Cluster, y.Cluster), cmp.Compare(x.Name, y.Name), cmp.Compare(x.ID, y.ID))
	})
	return v, nil
}

// selfMember is this broker from its own state.
func (b *Broker) selfMember() ClusterMember {
	m := ClusterMember{Cluster: b.cfg.Cluster, Name: b.cfg.BrokerName, Addr: b.Advertise().String(), Self: true,
		GRPCEndpoint: b.Endpoint(), Version: VersionDesc, Role: b.selfRole(0)}
	if ha := b.p.HA(); ha.Mode != pipeline.ReplicationNone {
		m.Epoch, m.SyncStateSet = ha.Role.Epoch, slices.Clone(ha.Role.SyncStateSet)
	}
	return m
}

// selfRole is this broker's role, registered as id.
func (b *Broker) selfRole(id int64) string {
	ha := b.p.HA()
	if ha.Mode == pipeline.ReplicationNone {
		return role.Name("", false, id)
	}
	return role.Name(ha.Role.Kind.String(), ha.Role.Fenced, id)
}

// otherMember completes another broker's row from its runtime figures
// (its role by id alone when they cannot be had).
func (b *Broker) otherMember(ctx context.Context, lookup ClusterLookup, m ClusterMember) ClusterMember {
	m.Role = role.Registered(m.ID)
	info, err := lookup.BrokerRuntime(ctx, m.Addr)
	if err != nil {
		m.Error = err.Error()
		return m
	}
	m.Version = info["brokerVersionDesc"]
	m.Role = role.Name(info["haRole"], info["haFenced"] == "true", m.ID)
	m.Epoch, _ = strconv.ParseInt(info["haEpoch"], 10, 64)
	for _, s := range strings.Split(info["haSyncStateSet"], ",") {
		if id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
			m.SyncStateSet = append(m.SyncStateSet, id)
		}
	}
	return m
}

// DeleteTopicRoute removes a topic from the name servers' routes (admin),
// as mqadmin deleteTopic does after DELETE_TOPIC_IN_BROKER: a broker that
// still has the topic publishes it again at its next registration. It
// asks the name servers, so it blocks (within ctx): not for an event loop.
func (b *Broker) DeleteTopicRoute(ctx context.Context, c Caller, topic string) error {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		return err
	}
	if topic == "" {
		return Errorf(BadRequest, "The specified topic is blank.")
	}
	lp := b.cluster.lookup.Load()
	if lp == nil {
		return nil // no name servers
	}
	if err := (*lp).DeleteTopicRoute(ctx, topic); err != nil {
		return Wrap(Unavailable, "delete the route of "+topic, err)
	}
	return nil
}
