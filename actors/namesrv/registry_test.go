package namesrv

import (
	"errors"
	"reflect"
	"testing"

	"github.com/wheelmq/wheelmq/storage/meta"
)

func TestRegisterValidation(t *testing.T) {
	ok := master("broker-a", "10.0.0.1:10911")
	tests := []struct {
		name   string
		mutate func(*BrokerInfo)
		topics map[string]meta.TopicConfig
		want   error
	}{
		{name: "valid", mutate: func(*BrokerInfo) {}},
		{name: "no cluster", mutate: func(b *BrokerInfo) { b.Cluster = "" }, want: ErrMissingField},
		{name: "no name", mutate: func(b *BrokerInfo) { b.BrokerName = "" }, want: ErrMissingField},
		{name: "no addr", mutate: func(b *BrokerInfo) { b.BrokerAddr = "" }, want: ErrMissingField},
		{name: "negative id", mutate: func(b *BrokerInfo) { b.BrokerID = -2 }, want: ErrInvalidValue},
		{name: "comma addr", mutate: func(b *BrokerInfo) { b.BrokerAddr = "a:1,b:2" }, want: ErrInvalidValue},
		{name: "backslash addr", mutate: func(b *BrokerInfo) { b.BrokerAddr = `a\:1` }, want: ErrInvalidValue},
		{name: "control char ha", mutate: func(b *BrokerInfo) { b.HAServerAddr = "a:1\n" }, want: ErrInvalidValue},
		{name: "negative queues", mutate: func(*BrokerInfo) {},
			topics: map[string]meta.TopicConfig{"T": {WriteQueueNums: -1}}, want: ErrInvalidValue},
		{name: "empty topic name", mutate: func(*BrokerInfo) {},
			topics: map[string]meta.TopicConfig{"": {}}, want: ErrInvalidValue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info := ok
			tc.mutate(&info)
			r := NewRegistry()
			_, err := r.Register(info, tc.topics, DataVersion{}, t0)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.want != nil && r.Len() != 0 {
				t.Error("refused registration was stored")
			}
		})
	}
}

func TestRegisterSemantics(t *testing.T) {
	r := NewRegistry()
	a0 := master("broker-a", "10.0.0.1:10911")
	res, err := r.Register(a0, topics(topic("T", 4), topic("U", 1)), DataVersion{Counter: 1}, t0)
	if err != nil || !res.New || res.MasterAddr != "" {
		t.Fatalf("first: %+v %v", res, err)
	}
	// A re-registration replaces the whole topic table.
	res, err = r.Register(a0, topics(topic("T", 8)), DataVersion{Counter: 2}, t0)
	if err != nil || res.New {
		t.Fatalf("second: %+v %v", res, err)
	}
	if got := r.TopicNames(); !reflect.DeepEqual(got, []string{"T"}) {
		t.Errorf("topics %v", got)
	}
	if rd, _ := r.Route("T"); rd.QueueDatas[0].WriteQueueNums != 8 {
		t.Errorf("route %+v", rd)
	}
	// The map handed in is copied.
	in := topics(topic("V", 1))
	if _, err := r.Register(a0, in, DataVersion{}, t0); err != nil {
		t.Fatal(err)
	}
	in["W"] = topic("W", 1)
	if hasRoute(r, "W") {
		t.Error("registry aliases the caller's map")
	}
	// Brokers returns copies.
	r.Brokers()[0].Topics["X"] = topic("X", 1)
	if hasRoute(r, "X") {
		t.Error("Brokers aliases the registry's map")
	}
	// Key fallback: an entry without topicName is named by its key.
	if _, err := r.Register(a0, map[string]meta.TopicConfig{"K": {ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		DataVersion{}, t0); err != nil || !hasRoute(r, "K") {
		t.Errorf("key fallback: %v %v", err, r.TopicNames())
	}
}

// TestSlavePromotion checks that an address re-registering under a new id
// replaces its old entry (one address, one broker).
func TestSlavePromotion(t *testing.T) {
	r := NewRegistry()
	mustRegister(t, r, slave("broker-a", "10.0.0.2:10911", 1), t0, topic("T", 4))
	mustRegister(t, r, master("broker-a", "10.0.0.2:10911"), t0, topic("T", 4))
	got := r.Brokers()
	if len(got) != 1 || got[0].Key.BrokerID != 0 {
		t.Fatalf("brokers %+v", got)
	}
	// The same address in another cluster is another broker.
	other := master("broker-x", "10.0.0.2:10911")
	other.Cluster = "Other"
	mustRegister(t, r, other, t0)
	if r.Len() != 2 {
		t.Errorf("len %d", r.Len())
	}
}

func TestClusterInfoAndDelete(t *testing.T) {
	r := NewRegistry()
	twoBrokers(t, r)
	c := master("broker-c", "10.0.0.7:10911")
	c.Cluster = "Other"
	mustRegister(t, r, c, t0, topic("T", 1))
	ci := r.ClusterInfo()
	wantClusters := map[string][]string{"DefaultCluster": {"broker-a", "broker-b"}, "Other": {"broker-c"}}
	if !reflect.DeepEqual(ci.ClusterAddrTable, wantClusters) || len(ci.BrokerAddrTable) != 3 {
		t.Errorf("cluster info %+v", ci)
	}
	if r.DeleteTopic("T", "Other") != true {
		t.Error("delete in Other found nothing")
	}
	if rd, _ := r.Route("T"); len(rd.QueueDatas) != 2 {
		t.Errorf("route after cluster delete %+v", rd)
	}
	if r.DeleteTopic("T", "") != true || hasRoute(r, "T") {
		t.Error("delete everywhere failed")
	}
	if r.DeleteTopic("T", "") {
		t.Error("second delete found the topic again")
	}
	// A registration with the topic brings it back.
	mustRegister(t, r, master("broker-b", "10.0.0.3:10911"), t0, topic("T", 2))
	if !hasRoute(r, "T") {
		t.Error("re-registration did not restore the topic")
	}
}

func TestUnregister(t *testing.T) {
	r := NewRegistry()
	twoBrokers(t, r)
	k := BrokerKey{"DefaultCluster", "broker-b", 0}
	if r.Unregister(k, "10.0.0.4:1") || !r.Contains(k) {
		t.Error("address mismatch unregistered")
	}
	if !r.Unregister(k, "") || r.Contains(k) || r.Unregister(k, "") {
		t.Error("unregister by key")
	}
}
