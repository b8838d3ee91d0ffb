package nsrvcodec

import (
	"reflect"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func TestExpire(t *testing.T) {
	short := master("broker-b", "10.0.0.3:10911")
	short.HeartbeatTimeout = 10 * time.Second
	setup := func(t *testing.T) *namesrv.Registry {
		r := namesrv.NewRegistry()
		mustRegister(t, r, master("broker-a", "10.0.0.1:10911"), t0, topic("T", 4), topic("A", 1))
		mustRegister(t, r, slave("broker-a", "10.0.0.2:10911", 1), t0.Add(30*time.Second), topic("T", 4), topic("A", 1))
		mustRegister(t, r, short, t0, topic("T", 2), topic("B", 1))
		return r
	}
	keyA0 := namesrv.BrokerKey{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerID: 0}
	keyA1 := namesrv.BrokerKey{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerID: 1}
	keyB0 := namesrv.BrokerKey{Cluster: "DefaultCluster", BrokerName: "broker-b", BrokerID: 0}
	tests := []struct {
		name      string
		at        time.Duration // after t0
		gone      []namesrv.BrokerKey
		routed    []string
		notRouted []string
		check     func(t *testing.T, r *namesrv.Registry)
	}{
		{name: "nothing due", at: 10 * time.Second, routed: []string{"T", "A", "B"}},
		{name: "short timeout due", at: 10*time.Second + time.Millisecond, gone: []namesrv.BrokerKey{keyB0},
			routed: []string{"T", "A"}, notRouted: []string{"B"},
			check: func(t *testing.T, r *namesrv.Registry) {
				rd, _ := r.Route("T")
				if len(rd.QueueDatas) != 1 || rd.QueueDatas[0].BrokerName != "broker-a" {
					t.Errorf("route %+v", rd)
				}
			}},
		{name: "master due, slave keeps routes", at: 120*time.Second + time.Millisecond, gone: []namesrv.BrokerKey{keyA0, keyB0},
			routed: []string{"T", "A"}, notRouted: []string{"B"},
			check: func(t *testing.T, r *namesrv.Registry) {
				rd, _ := r.Route("A")
				if !reflect.DeepEqual(rd.BrokerDatas[0].BrokerAddrs, map[int64]string{1: "10.0.0.2:10911"}) {
					t.Errorf("addrs %v", rd.BrokerDatas[0].BrokerAddrs)
				}
				resp := handle(r, routeReq("B"), t0)
				if resp.Code != remoting.TopicNotExist {
					t.Errorf("code %d", resp.Code)
				}
			}},
		{name: "all due", at: 151 * time.Second, gone: []namesrv.BrokerKey{keyA0, keyA1, keyB0},
			notRouted: []string{"T", "A", "B"},
			check: func(t *testing.T, r *namesrv.Registry) {
				if r.Len() != 0 || len(r.TopicNames()) != 0 {
					t.Errorf("left %d %v", r.Len(), r.TopicNames())
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := setup(t)
			gone := r.Expire(t0.Add(tc.at))
			if !reflect.DeepEqual(gone, tc.gone) {
				t.Errorf("gone %v, want %v", gone, tc.gone)
			}
			if again := r.Expire(t0.Add(tc.at)); len(again) != 0 {
				t.Errorf("second scan dropped %v", again)
			}
			for _, topic := range tc.routed {
				if !hasRoute(r, topic) {
					t.Errorf("%s lost its route", topic)
				}
			}
			for _, topic := range tc.notRouted {
				if hasRoute(r, topic) {
					t.Errorf("%s still routed", topic)
				}
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// TestExpireRenewal checks a re-registration restarts the timeout.
func TestExpireRenewal(t *testing.T) {
	r := namesrv.NewRegistry()
	info := master("broker-a", "10.0.0.1:10911")
	mustRegister(t, r, info, t0, topic("T", 1))
	mustRegister(t, r, info, t0.Add(100*time.Second), topic("T", 1))
	if gone := r.Expire(t0.Add(200 * time.Second)); len(gone) != 0 {
		t.Fatalf("renewed broker expired: %v", gone)
	}
	if gone := r.Expire(t0.Add(221 * time.Second)); len(gone) != 1 {
		t.Fatalf("gone %v", gone)
	}
}
