package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/chaos/proxy"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// ControllerGetMetadataInfo is RocketMQ's CONTROLLER_GET_METADATA_INFO.
const ControllerGetMetadataInfo = remoting.ControllerGetMetadataInfo

// access is how the harness's own requests reach a process: over TLS
// (nil: plaintext), signed by creds (zero: unsigned).
type access struct {
	tls   *tls.Config
	creds auth.Credentials
}

// access is the cluster's Config.TLS and Config.Admin.
func (c *Cluster) access() access { return access{tls: c.cfg.TLS, creds: c.cfg.Admin} }

// invoke sends one request with a 2 s deadline.
func invoke(addr string, req *remoting.Command, a access) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	o := remoting.ClientOptions{TLS: a.tls}
	if !a.creds.IsZero() {
		o.Sign = a.creds.Signer()
	}
	c, err := remoting.Dial(ctx, addr, o)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	defer c.Close()
	resp, err := c.Invoke(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("invoke %d on %s: %w", req.Code, addr, err)
	}
	return resp, nil
}

// MasterAddr asks the name server at namesrv for group's brokerId-0
// address (GET_BROKER_CLUSTER_INFO brokerAddrTable[group].brokerAddrs["0"]);
// "" when it routes none.
func MasterAddr(namesrv, group string) (string, error) {
	return masterAddr(namesrv, group, access{})
}

func masterAddr(namesrv, group string, a access) (string, error) {
	resp, err := invoke(namesrv, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil), a)
	if err != nil {
		return "", err
	}
	if resp.Code != remoting.Success {
		return "", fmt.Errorf("GET_BROKER_CLUSTER_INFO on %s: code %d %s", namesrv, resp.Code, resp.Remark)
	}
	var info struct {
		BrokerAddrTable map[string]struct {
			BrokerAddrs map[string]string `json:"brokerAddrs"`
		} `json:"brokerAddrTable"`
	}
	if err := json.Unmarshal(resp.Body, &info); err != nil {
		return "", fmt.Errorf("GET_BROKER_CLUSTER_INFO on %s: %w", namesrv, err)
	}
	return info.BrokerAddrTable[group].BrokerAddrs["0"], nil
}

// byAddr finds the broker of g advertising addr.
func (g *Group) byAddr(addr string) *Broker {
	for _, b := range g.Brokers {
		if b.Addr() == addr {
			return b
		}
	}
	return nil
}

// Master asks every running name server for g's master; it answers the
// broker when they all agree (nil, no error: none routed anywhere).
func (c *Cluster) Master(g *Group) (*Broker, error) {
	var addr string
	asked := 0
	for _, n := range c.Namesrvs {
		if !n.Proc.Running() || n.Proc.Paused() {
			continue
		}
		a, err := masterAddr(n.Addr, g.Name, c.access())
		if err != nil {
			return nil, err
		}
		if asked > 0 && a != addr {
			return nil, fmt.Errorf("name servers disagree on %s's master: %q vs %q", g.Name, addr, a)
		}
		addr = a
		asked++
	}
	if asked == 0 {
		return nil, errors.New("no name server running")
	}
	if addr == "" {
		return nil, nil
	}
	b := g.byAddr(addr)
	if b == nil {
		return nil, fmt.Errorf("master %s of %s is none of the group's brokers", addr, g.Name)
	}
	return b, nil
}

// WaitMaster waits until every running name server routes one master for g
// other than old ("" or nil old: any master) and returns it.
func (c *Cluster) WaitMaster(g *Group, old string, timeout time.Duration) (*Broker, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		b, err := c.Master(g)
		if err == nil && b != nil && b.Addr() != old {
			return b, nil
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("master is %v", b)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no new master of %s within %v (old %q): %w", g.Name, timeout, old, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ControllerLeader asks the running name servers' controllers (1005) for
// the raft leader and returns its name server; it matches
// controllerLeaderAddress against both the name server's remoting address
// and its controller address.
func (c *Cluster) ControllerLeader() (*Namesrv, error) {
	var errs []error
	for _, n := range c.Namesrvs {
		if !n.Proc.Running() || n.Proc.Paused() {
			continue
		}
		resp, err := invoke(n.Addr, remoting.NewRequest(ControllerGetMetadataInfo, nil, nil), c.access())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if resp.Code != remoting.Success {
			errs = append(errs, fmt.Errorf("1005 on %s: code %d %s", n.Addr, resp.Code, resp.Remark))
			continue
		}
		if resp.ExtFields["isLeader"] == "true" {
			return n, nil
		}
		leader := resp.ExtFields["controllerLeaderAddress"]
		for _, m := range c.Namesrvs {
			if leader != "" && (leader == m.Addr || leader == m.Controller) {
				return m, nil
			}
		}
		errs = append(errs, fmt.Errorf("1005 on %s: leader %q unknown", n.Addr, leader))
	}
	return nil, fmt.Errorf("no controller leader: %w", errors.Join(errs...))
}

// Isolate sets the broker's every link (clients, replicas, controllers) to
// mode.
func (b *Broker) Isolate(mode proxy.Mode) {
	b.Client.SetMode(mode)
	b.IsolateFromReplicas(mode)
	for _, p := range b.ToNamesrv {
		p.SetMode(mode)
	}
}

// IsolateFromReplicas sets b's HA proxy to mode: the replicas following b
// (a master) reach it only through it. b's own outgoing HA connections (as
// a replica) go through the other brokers' HA proxies and stay as they are.
func (b *Broker) IsolateFromReplicas(mode proxy.Mode) { b.HA.SetMode(mode) }

// IsolateFromNamesrv sets b's link to name server (controller) n to mode.
func (b *Broker) IsolateFromNamesrv(n *Namesrv, mode proxy.Mode) { b.ToNamesrv[n.Index].SetMode(mode) }

// Heal sets every proxy of the cluster back to Pass and resumes paused
// processes.
func (c *Cluster) Heal() {
	for _, b := range c.Brokers() {
		b.Isolate(proxy.Pass)
		if b.Proc.Paused() {
			_ = b.Proc.Resume()
		}
	}
	for _, n := range c.Namesrvs {
		if n.Proc.Paused() {
			_ = n.Proc.Resume()
		}
	}
}
