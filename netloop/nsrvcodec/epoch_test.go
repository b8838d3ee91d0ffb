package nsrvcodec

import (
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func TestStaleMasterEpochRefused(t *testing.T) {
	r := namesrv.NewRegistry()
	r.SetMasterEpoch(func(cluster, brokerName string) (int64, bool) {
		if cluster == "c" && brokerName == "b" {
			return 3, true
		}
		return 0, false
	})
	cases := []struct {
		name     string
		id       int64
		broker   string
		epoch    int64
		wantCode int32
	}{
		{"older master epoch", 0, "b", 2, namesrv.CodeFencedMasterEpoch},
		{"current master epoch", 0, "b", 3, remoting.Success},
		{"newer master epoch", 0, "b", 4, remoting.Success},
		{"no replication (epoch 0)", 0, "b", 0, remoting.Success},
		{"replica with an old epoch", 1, "b", 1, remoting.Success},
		{"group unknown to the controller", 0, "other", 1, remoting.Success},
	}
	for _, c := range cases {
		info := namesrv.BrokerInfo{Cluster: "c", BrokerName: c.broker, BrokerAddr: "127.0.0.1:10911", BrokerID: c.id}
		req, err := NewRegisterRequest(info, nil, namesrv.DataVersion{StateVersion: c.epoch, Counter: 1})
		if err != nil {
			t.Fatal(err)
		}
		resp := handle(r, req, t0)
		if resp.Code != c.wantCode {
			t.Fatalf("%s: code %d %q, want %d", c.name, resp.Code, resp.Remark, c.wantCode)
		}
		if c.wantCode != remoting.Success && r.Contains(namesrv.BrokerKey{Cluster: "c", BrokerName: c.broker, BrokerID: c.id}) {
			t.Fatalf("%s: refused registration entered the routes", c.name)
		}
		r.Unregister(namesrv.BrokerKey{Cluster: "c", BrokerName: c.broker, BrokerID: c.id}, "")
	}
}
