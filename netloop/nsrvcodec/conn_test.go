package nsrvcodec

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// registerOn registers info over connection conn through the wire path
// and fails the test unless the answer is SUCCESS.
func registerOn(t *testing.T, r *namesrv.Registry, info namesrv.BrokerInfo, conn uint64, now time.Time, tcs ...meta.TopicConfig) {
	t.Helper()
	req, err := NewRegisterRequest(info, topics(tcs...), namesrv.DataVersion{Timestamp: now.UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if resp := Handle(r, req, now, conn); resp.Code != remoting.Success {
		t.Fatalf("register %+v over %d: code %d %s", info, conn, resp.Code, resp.Remark)
	}
}

// routeBrokers returns the broker names in the topic's route (queue datas
// and broker datas must agree), or nil when it has none.
func routeBrokers(t *testing.T, r *namesrv.Registry, topic string) []string {
	t.Helper()
	resp := handle(r, routeReq(topic), t0)
	if resp.Code == remoting.TopicNotExist {
		return nil
	}
	var rd namesrv.TopicRouteData
	if err := json.Unmarshal(resp.Body, &rd); err != nil {
		t.Fatalf("route %s: %v", topic, err)
	}
	var qs, bs []string
	for _, q := range rd.QueueDatas {
		qs = append(qs, q.BrokerName)
	}
	for _, b := range rd.BrokerDatas {
		bs = append(bs, b.BrokerName)
	}
	if !slices.Equal(qs, bs) {
		t.Fatalf("route %s: queue datas %v, broker datas %v", topic, qs, bs)
	}
	return qs
}

// clusterBrokers returns GET_BROKER_CLUSTER_INFO's broker names of
// DefaultCluster and the broker address table's names.
func clusterBrokers(t *testing.T, r *namesrv.Registry) (cluster, table []string) {
	t.Helper()
	resp := handle(r, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil), t0)
	var ci namesrv.ClusterInfo
	if err := json.Unmarshal(resp.Body, &ci); err != nil {
		t.Fatalf("cluster info: %v", err)
	}
	for name := range ci.BrokerAddrTable {
		table = append(table, name)
	}
	slices.Sort(table)
	return ci.ClusterAddrTable["DefaultCluster"], table
}

// TestMergeAndConnectionClose covers the name server's view of a cluster:
// routes merge the topic tables of every broker, and a broker leaves them
// when the connection it registered over closes or when it has been silent
// for its heartbeat timeout.
func TestMergeAndConnectionClose(t *testing.T) {
	a := master("broker-a", "10.0.0.1:10911")
	b := master("broker-b", "10.0.0.2:10911")
	// setup: broker-a on connection 1 with T and A, broker-b on connection
	// 2 with T and B, both at t0.
	setup := func(t *testing.T) *namesrv.Registry {
		r := namesrv.NewRegistry()
		registerOn(t, r, a, 1, t0, topic("T", 4), topic("A", 2))
		registerOn(t, r, b, 2, t0, topic("T", 8), topic("B", 1))
		return r
	}
	tests := []struct {
		name    string
		act     func(t *testing.T, r *namesrv.Registry) []namesrv.BrokerKey
		gone    []namesrv.BrokerKey
		routes  map[string][]string // topic -> broker names in its route (nil: no route)
		brokers []string            // DefaultCluster's broker names
	}{
		{
			name:    "both registered: routes merge",
			act:     func(*testing.T, *namesrv.Registry) []namesrv.BrokerKey { return nil },
			routes:  map[string][]string{"T": {"broker-a", "broker-b"}, "A": {"broker-a"}, "B": {"broker-b"}},
			brokers: []string{"broker-a", "broker-b"},
		},
		{
			name:    "broker-b's connection closes",
			act:     func(_ *testing.T, r *namesrv.Registry) []namesrv.BrokerKey { return r.DropConn(2) },
			gone:    []namesrv.BrokerKey{{Cluster: "DefaultCluster", BrokerName: "broker-b", BrokerID: 0}},
			routes:  map[string][]string{"T": {"broker-a"}, "A": {"broker-a"}, "B": nil},
			brokers: []string{"broker-a"},
		},
		{
			name:    "an unknown connection closes",
			act:     func(_ *testing.T, r *namesrv.Registry) []namesrv.BrokerKey { return r.DropConn(9) },
			routes:  map[string][]string{"T": {"broker-a", "broker-b"}, "A": {"broker-a"}, "B": {"broker-b"}},
			brokers: []string{"broker-a", "broker-b"},
		},
		{
			name:    "connection 0 means unknown and drops nothing",
			act:     func(_ *testing.T, r *namesrv.Registry) []namesrv.BrokerKey { return r.DropConn(0) },
			routes:  map[string][]string{"T": {"broker-a", "broker-b"}},
			brokers: []string{"broker-a", "broker-b"},
		},
		{
			name: "broker-b re-registered over a new connection: the old one's close keeps it",
			act: func(t *testing.T, r *namesrv.Registry) []namesrv.BrokerKey {
				registerOn(t, r, b, 3, t0.Add(time.Second), topic("T", 8), topic("B", 1))
				return r.DropConn(2)
			},
			routes:  map[string][]string{"T": {"broker-a", "broker-b"}, "B": {"broker-b"}},
			brokers: []string{"broker-a", "broker-b"},
		},
		{
			name: "a new process of broker-b registered before the old connection's close arrived",
			act: func(t *testing.T, r *namesrv.Registry) []namesrv.BrokerKey {
				registerOn(t, r, b, 3, t0.Add(time.Second), topic("T", 8))
				return append(r.DropConn(2), r.DropConn(3)...)
			},
			gone:    []namesrv.BrokerKey{{Cluster: "DefaultCluster", BrokerName: "broker-b", BrokerID: 0}},
			routes:  map[string][]string{"T": {"broker-a"}, "B": nil},
			brokers: []string{"broker-a"},
		},
		{
			name: "both brokers over one connection (a proxy) leave together",
			act: func(t *testing.T, r *namesrv.Registry) []namesrv.BrokerKey {
				registerOn(t, r, a, 7, t0, topic("T", 4))
				registerOn(t, r, b, 7, t0, topic("T", 4))
				return r.DropConn(7)
			},
			gone:   []namesrv.BrokerKey{{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerID: 0}, {Cluster: "DefaultCluster", BrokerName: "broker-b", BrokerID: 0}},
			routes: map[string][]string{"T": nil, "A": nil},
		},
		{
			name: "broker-b stops registering: gone after 120 s, broker-a renewed stays",
			act: func(t *testing.T, r *namesrv.Registry) []namesrv.BrokerKey {
				registerOn(t, r, a, 1, t0.Add(90*time.Second), topic("T", 4), topic("A", 2))
				if gone := r.Expire(t0.Add(namesrv.DefaultHeartbeatTimeout)); len(gone) != 0 {
					t.Fatalf("expired at exactly 120 s: %v", gone)
				}
				return r.Expire(t0.Add(namesrv.DefaultHeartbeatTimeout + time.Millisecond))
			},
			gone:    []namesrv.BrokerKey{{Cluster: "DefaultCluster", BrokerName: "broker-b", BrokerID: 0}},
			routes:  map[string][]string{"T": {"broker-a"}, "A": {"broker-a"}, "B": nil},
			brokers: []string{"broker-a"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := setup(t)
			gone := tc.act(t, r)
			if !reflect.DeepEqual(gone, tc.gone) {
				t.Errorf("gone %v, want %v", gone, tc.gone)
			}
			for topic, want := range tc.routes {
				if got := routeBrokers(t, r, topic); !slices.Equal(got, want) {
					t.Errorf("route of %s: brokers %v, want %v", topic, got, want)
				}
			}
			cluster, table := clusterBrokers(t, r)
			if !slices.Equal(cluster, tc.brokers) || !slices.Equal(table, tc.brokers) {
				t.Errorf("cluster info: cluster %v, table %v, want %v", cluster, table, tc.brokers)
			}
		})
	}
}

// TestActorConnClosed drives the actor: a broker registered over a
// connection leaves the routes when ConnClosed names it, another broker
// stays, and the removal is logged.
func TestActorConnClosed(t *testing.T) {
	logs := &syncBuffer{}
	st := startActor(t, &fakeClock{}, logs)
	for i, info := range []namesrv.BrokerInfo{master("broker-a", "10.0.0.1:10911"), master("broker-b", "10.0.0.2:10911")} {
		req, err := NewRegisterRequest(info, topics(topic("T", 4)), namesrv.DataVersion{})
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan *remoting.Command, 1)
		Serve(st, req, uint64(i+1), nil, func(c *remoting.Command) { ch <- c })
		if resp := <-ch; resp.Code != remoting.Success {
			t.Fatalf("register %s: %d %s", info.BrokerName, resp.Code, resp.Remark)
		}
	}
	if resp := ask(t, st, routeReq("T")); !strings.Contains(string(resp.Body), "broker-b") {
		t.Fatalf("route before close: %s", resp.Body)
	}
	st.Send(namesrv.ConnClosed{Conn: 2})
	resp := ask(t, st, routeReq("T")) // served after the ConnClosed
	if resp.Code != remoting.Success || strings.Contains(string(resp.Body), "broker-b") ||
		!strings.Contains(string(resp.Body), "broker-a") {
		t.Fatalf("route after broker-b's connection closed: %d %s", resp.Code, resp.Body)
	}
	st.Send(&namesrv.ConnClosed{Conn: 1})
	if resp := ask(t, st, routeReq("T")); resp.Code != remoting.TopicNotExist {
		t.Fatalf("route after both closed: %d %s", resp.Code, resp.Body)
	}
	out := logs.String()
	if strings.Count(out, "namesrv: broker connection closed, broker removed") != 2 {
		t.Errorf("want two removal logs:\n%s", out)
	}
}
