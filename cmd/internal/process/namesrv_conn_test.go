package process_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/nsrvcodec"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestNamesrvDropsBrokerOnConnectionClose runs a name server alone and
// registers two brokers over their own connections: closing one broker's
// connection takes it out of the routes at once (long before its 120 s
// heartbeat timeout), while a client connection closing changes nothing.
func TestNamesrvDropsBrokerOnConnectionClose(t *testing.T) {
	n, err := process.Start(process.Config{NamesrvListen: "127.0.0.1:0", Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	ns := n.NamesrvAddr()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topic := processtest.Unique("cluster")
	register := func(name, addr string) *remoting.Client {
		c, err := remoting.Dial(ctx, ns, remoting.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		req, err := nsrvcodec.NewRegisterRequest(namesrv.BrokerInfo{Cluster: "DefaultCluster", BrokerName: name, BrokerAddr: addr},
			map[string]meta.TopicConfig{topic: {TopicName: topic, ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}}, namesrv.DataVersion{})
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := c.Invoke(ctx, req); err != nil || resp.Code != remoting.Success {
			t.Fatalf("register %s: %v %+v", name, err, resp)
		}
		return c
	}
	ca := register("broker-a", "127.0.0.1:1")
	cb := register("broker-b", "127.0.0.1:2")
	brokersOf := func() []string {
		resp := processtest.Invoke(t, ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		if resp.Code != remoting.Success {
			return nil
		}
		rd, err := namesrv.ParseRouteData(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, q := range rd.QueueDatas {
			names = append(names, q.BrokerName)
		}
		return names
	}
	if got := brokersOf(); len(got) != 2 {
		t.Fatalf("route brokers %v, want broker-a and broker-b", got)
	}
	// processtest.Invoke's own connections opened and closed meanwhile: no
	// broker left. Now broker-b's connection closes.
	_ = cb.Close()
	waitFor(t, 10*time.Second, "broker-b leaves the route", func() bool {
		got := brokersOf()
		return len(got) == 1 && got[0] == "broker-a"
	})
	_ = ca.Close()
	waitFor(t, 10*time.Second, "the topic leaves the name server", func() bool { return brokersOf() == nil })
}

// waitFor polls cond every 20 ms until it holds or the deadline passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
