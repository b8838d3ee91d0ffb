package broker

import (
	"slices"
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv"
)

// TestGroupEndpoint: a group's gRPC endpoint is its master's registered
// one; without one, its master's host with this broker's gRPC port
// (RocketMQ's proxy convention); a group without a master has none.
func TestGroupEndpoint(t *testing.T) {
	rd := &namesrv.TopicRouteData{BrokerDatas: []namesrv.BrokerData{
		{BrokerName: "a", BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"},
			GRPCEndpoints: map[int64]string{0: "10.0.0.1:8081", 1: "10.0.0.2:8081"}},
		{BrokerName: "b", BrokerAddrs: map[int64]string{0: "[fd00::3]:10911"}},
		{BrokerName: "c", BrokerAddrs: map[int64]string{2: "10.0.0.5:10911"}, GRPCEndpoints: map[int64]string{2: "10.0.0.5:8081"}},
	}}
	tests := []struct {
		group, want string
		ok          bool
	}{
		{"a", "10.0.0.1:8081", true},
		{"b", "[fd00::3]:18081", true},
		{"c", "", false},
		{"d", "", false},
	}
	for _, tc := range tests {
		if got, ok := groupEndpoint(rd, tc.group, "127.0.0.1:18081"); got != tc.want || ok != tc.ok {
			t.Errorf("%s: %q %v, want %q %v", tc.group, got, ok, tc.want, tc.ok)
		}
	}
}

// TestGroupReplicas: a route lists a group's other members' endpoints by
// broker id, without its master's (wherever it is listed, e.g. a promoted
// replica's old id not yet expired), a member that left, or a member
// without an endpoint.
func TestGroupReplicas(t *testing.T) {
	rd := &namesrv.TopicRouteData{BrokerDatas: []namesrv.BrokerData{
		{BrokerName: "a", BrokerAddrs: map[int64]string{0: "10.0.0.2:10911", 1: "10.0.0.2:10911", 3: "10.0.0.3:10911", 2: "10.0.0.4:10911", 5: ""},
			GRPCEndpoints: map[int64]string{0: "10.0.0.2:8081", 1: "10.0.0.2:8081", 3: "10.0.0.3:8081", 2: "10.0.0.4:8081", 5: "10.0.0.9:8081"}},
		{BrokerName: "b", BrokerAddrs: map[int64]string{0: "10.0.0.7:10911", 1: "10.0.0.8:10911"}, GRPCEndpoints: map[int64]string{0: "10.0.0.7:8081"}},
	}}
	if got, want := groupReplicas(rd, "a", "10.0.0.2:8081"), []string{"10.0.0.4:8081", "10.0.0.3:8081"}; !slices.Equal(got, want) {
		t.Errorf("a: %v, want %v", got, want)
	}
	if got := groupReplicas(rd, "b", "10.0.0.7:8081"); got != nil {
		t.Errorf("b (its replica registered no endpoint): %v, want none", got)
	}
	if got := groupReplicas(nil, "a", ""); got != nil {
		t.Errorf("no route data: %v", got)
	}
}
