package process

// The broker API's cluster lookup (broker.ClusterLookup): the embedded
// name server's registry read in process, or the broker's name servers
// asked over the network; another broker's runtime figures asked of it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// clusterCallTimeout bounds one request of the cluster lookup.
const clusterCallTimeout = 2 * time.Second

// clusterLookup implements broker.ClusterLookup for a Node's broker.
type clusterLookup struct{ n *Node }

var _ broker.ClusterLookup = clusterLookup{}

// LookUpCluster reads the embedded name server's registry when the broker
// registers with it (a typed query to its stage: no socket), else asks the
// broker's name servers in turn.
func (l clusterLookup) LookUpCluster(ctx context.Context) (*namesrv.ClusterInfo, error) {
	bc := l.n.broker.cfg
	if st := l.n.nsStage; st != nil && slices.Contains(bc.NameServers, l.n.NamesrvAddr()) {
		ch := make(chan *namesrv.ClusterInfo, 1)
		st.Send(&namesrv.ClusterQuery{Reply: func(ci *namesrv.ClusterInfo) { ch <- ci }})
		select {
		case ci := <-ch:
			if ci == nil {
				return nil, fmt.Errorf("the embedded name server is down")
			}
			return ci, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("embedded name server: %w", ctx.Err())
		}
	}
	if len(bc.NameServers) == 0 {
		return nil, fmt.Errorf("the broker has no name server")
	}
	ns := newNSRoutes(bc.NameServers, bc.NamesrvTLS, auth.Credentials(bc.RegisterCredentials), l.n.cfg.Logger)
	defer ns.Close()
	var errs []error
	for _, addr := range bc.NameServers {
		ci, err := ns.cluster(ctx, addr)
		if err == nil {
			return ci, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// cluster asks one name server for GET_BROKER_CLUSTER_INFO.
func (l *nsRoutes) cluster(ctx context.Context, addr string) (*namesrv.ClusterInfo, error) {
	cctx, cancel := context.WithTimeout(ctx, clusterCallTimeout)
	defer cancel()
	c, err := l.conn(cctx, addr)
	if err != nil {
		return nil, err
	}
	req := remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil)
	l.creds.Sign(req)
	resp, err := c.Invoke(cctx, req)
	if err != nil {
		return nil, fmt.Errorf("name server %s: %w", addr, err)
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("name server %s: cluster info: code %d: %s", addr, resp.Code, resp.Remark)
	}
	var ci namesrv.ClusterInfo
	if err := json.Unmarshal(resp.Body, &ci); err != nil {
		return nil, fmt.Errorf("name server %s: cluster info: %w", addr, err)
	}
	return &ci, nil
}

// BrokerRuntime asks another broker for GET_BROKER_RUNTIME_INFO, signed
// with the broker's registration credentials (the API allows the cluster
// view to admins only).
func (l clusterLookup) BrokerRuntime(ctx context.Context, addr string) (map[string]string, error) {
	cctx, cancel := context.WithTimeout(ctx, clusterCallTimeout)
	defer cancel()
	opts := remoting.ClientOptions{Logger: l.n.cfg.Logger}
	if l.n.tls != nil && l.n.cfg.TLS.Mode == netloop.TLSEnforcing {
		opts.TLS = l.n.tls.ClientConfig()
	}
	c, err := remoting.Dial(cctx, addr, opts)
	if err != nil {
		return nil, fmt.Errorf("dial broker %s: %w", addr, err)
	}
	defer func() { _ = c.Close() }()
	req := remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil)
	auth.Credentials(l.n.broker.cfg.RegisterCredentials).Sign(req)
	resp, err := c.Invoke(cctx, req)
	if err != nil {
		return nil, fmt.Errorf("broker %s: %w", addr, err)
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("broker %s: runtime info: code %d: %s", addr, resp.Code, resp.Remark)
	}
	var body struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("broker %s: runtime info: %w", addr, err)
	}
	return body.Table, nil
}

// DeleteTopicRoute removes topic from every name server of the broker:
// the embedded one in process, the others with DELETE_TOPIC_IN_NAMESRV.
func (l clusterLookup) DeleteTopicRoute(ctx context.Context, topic string) error {
	bc := l.n.broker.cfg
	var errs []error
	var ns *nsRoutes
	for _, addr := range bc.NameServers {
		if st := l.n.nsStage; st != nil && addr == l.n.NamesrvAddr() {
			ch := make(chan struct{}, 1)
			st.Send(&namesrv.DeleteRoute{Topic: topic, Done: func(bool) { ch <- struct{}{} }})
			select {
			case <-ch:
			case <-ctx.Done():
				errs = append(errs, fmt.Errorf("embedded name server: %w", ctx.Err()))
			}
			continue
		}
		if ns == nil {
			ns = newNSRoutes(bc.NameServers, bc.NamesrvTLS, auth.Credentials(bc.RegisterCredentials), l.n.cfg.Logger)
		}
		if err := ns.deleteTopic(ctx, addr, topic); err != nil {
			errs = append(errs, err)
		}
	}
	if ns != nil {
		ns.Close()
	}
	return errors.Join(errs...)
}

// deleteTopic sends DELETE_TOPIC_IN_NAMESRV to one name server.
func (l *nsRoutes) deleteTopic(ctx context.Context, addr, topic string) error {
	cctx, cancel := context.WithTimeout(ctx, clusterCallTimeout)
	defer cancel()
	c, err := l.conn(cctx, addr)
	if err != nil {
		return err
	}
	req := remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": topic}, nil)
	l.creds.Sign(req)
	resp, err := c.Invoke(cctx, req)
	if err != nil {
		return fmt.Errorf("name server %s: %w", addr, err)
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("name server %s: delete the route of %s: code %d: %s", addr, topic, resp.Code, resp.Remark)
	}
	return nil
}
