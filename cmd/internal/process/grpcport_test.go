package process_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestGRPCPortTaken: an address asked for (--grpc-listen) that another
// listener holds fails the start with an error naming --grpc-listen; the
// default one moves aside to a port the kernel picks, advertised on the
// broker's advertised host and registered with the name server.
func TestGRPCPortTaken(t *testing.T) {
	t.Parallel()
	taken := holdListener(t)

	bc := pipeline.DefaultConfig()
	bc.DataDir, bc.Listen = t.TempDir(), "127.0.0.1:0"
	_, err := process.Start(process.Config{Broker: bc, RunBroker: true, NamesrvListen: "127.0.0.1:0",
		GRPC: process.GRPCConfig{Listen: taken}})
	if err == nil || !strings.Contains(err.Error(), "--grpc-listen "+taken) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("start on a taken --grpc-listen: %v", err)
	}

	n := processtest.Start(t, processtest.Options{MutateNode: func(c *process.Config) {
		c.GRPC = process.GRPCConfig{Listen: taken, ListenIsDefault: true}
	}})
	if n.GRPCAddr() == "" || n.GRPCAddr() == taken {
		t.Fatalf("the default endpoint did not move aside: %q", n.GRPCAddr())
	}
	if adv := n.GRPC().Advertise(); adv != n.GRPCAddr() {
		t.Fatalf("advertised %s, bound %s", adv, n.GRPCAddr())
	}
	if ep := n.Broker().Core().Endpoint(); ep != n.GRPCAddr() {
		t.Fatalf("the broker API's endpoint is %q, want %s", ep, n.GRPCAddr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if info := clusterInfo(t, n.NamesrvAddr()); info.BrokerAddrTable["broker-a"].GRPCEndpoints[0] == n.GRPCAddr() {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the name server does not list the endpoint %s: %+v", n.GRPCAddr(), clusterInfo(t, n.NamesrvAddr()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// holdListener serves a loopback port for the whole test (a port another
// server holds, not a reservation: closing each connection it accepts)
// and returns its address.
func holdListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // ends when the listener closes
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}

// clusterInfo asks the name server at addr for GET_BROKER_CLUSTER_INFO.
func clusterInfo(t *testing.T, addr string) namesrv.ClusterInfo {
	t.Helper()
	resp := processtest.Invoke(t, addr, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
	var ci namesrv.ClusterInfo
	if resp.Code != remoting.Success || json.Unmarshal(resp.Body, &ci) != nil {
		t.Fatalf("cluster info: %d %s %s", resp.Code, resp.Remark, resp.Body)
	}
	return ci
}
