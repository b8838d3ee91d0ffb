package process

// The console's cluster page, through the broker API's cluster view
// (actors/broker/cluster.go): the brokers the name servers know, this
// broker's role and version from its own state.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
)

func (cb *consoleBackend) Cluster(ctx context.Context, c console.Credentials) (console.Cluster, error) {
	var cl console.Cluster
	if cb.n.broker == nil {
		return cb.namesrvCluster(ctx, c)
	}
	cl.NameServers = cb.n.broker.cfg.NameServers
	v, err := cb.n.broker.core.Cluster(ctx, cb.caller(c))
	if err != nil {
		return cl, err
	}
	for _, m := range v.Members {
		row := console.Broker{Cluster: m.Cluster, Name: m.Name, Addr: m.Addr, ID: m.ID, Role: m.Role, Epoch: m.Epoch,
			Version: m.Version, Error: m.Error}
		for _, id := range m.SyncStateSet {
			row.SyncSet = append(row.SyncSet, strconv.FormatInt(id, 10))
		}
		cl.Brokers = append(cl.Brokers, row)
	}
	if v.Error != "" {
		return cl, errors.New(v.Error)
	}
	return cl, nil
}

// namesrvCluster is the cluster page of a process that runs a name server
// and no broker: the brokers its registry holds, named by their ids (an
// admin's view, as the cluster view is).
func (cb *consoleBackend) namesrvCluster(ctx context.Context, c console.Credentials) (console.Cluster, error) {
	var cl console.Cluster
	st := cb.n.nsStage
	if st == nil {
		return cl, errors.New("this process runs no broker and no name server")
	}
	cl.NameServers = []string{cb.n.NamesrvAddr()}
	if g := cb.n.guard; g != nil {
		if acct, ok := g.Lookup(c.AccessKey); !ok || !acct.IsAdmin() {
			return cl, errors.New("the cluster view is for admin accounts")
		}
	}
	ch := make(chan *namesrv.ClusterInfo, 1)
	st.Send(&namesrv.ClusterQuery{Reply: func(ci *namesrv.ClusterInfo) { ch <- ci }})
	var ci *namesrv.ClusterInfo
	select {
	case ci = <-ch:
	case <-ctx.Done():
		return cl, fmt.Errorf("name server: %w", ctx.Err())
	}
	if ci == nil {
		return cl, errors.New("the name server is down")
	}
	for _, bd := range ci.BrokerAddrTable {
		for id, addr := range bd.BrokerAddrs {
			cl.Brokers = append(cl.Brokers, console.Broker{Cluster: bd.Cluster, Name: bd.BrokerName, Addr: addr, ID: id,
				Role: role.Registered(id)})
		}
	}
	slices.SortFunc(cl.Brokers, func(x, y console.Broker) int {
		return cmp.Or(cmp.Compare(x.Cluster, y.Cluster), cmp.Compare(x.Name, y.Name), cmp.Compare(x.ID, y.ID))
	})
	return cl, nil
}
