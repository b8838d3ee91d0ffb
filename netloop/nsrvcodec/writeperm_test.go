package nsrvcodec

import (
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

func TestWipeAndAddWritePerm(t *testing.T) {
	r := namesrv.NewRegistry()
	twoBrokers(t, r)
	permOf := func(topic, broker string) int32 {
		t.Helper()
		rd, ok := r.Route(topic)
		if !ok {
			t.Fatalf("no route for %s", topic)
		}
		for _, q := range rd.QueueDatas {
			if q.BrokerName == broker {
				return q.Perm
			}
		}
		t.Fatalf("route of %s has no %s", topic, broker)
		return 0
	}
	call := func(code int32, broker string) *remoting.Command {
		t.Helper()
		resp := handle(r, remoting.NewRequest(code, map[string]string{"brokerName": broker}, nil), t0)
		if resp.Code != remoting.Success {
			t.Fatalf("code %d for %s: %d %q", code, broker, resp.Code, resp.Remark)
		}
		return resp
	}
	resp := call(remoting.WipeWritePermOfBroker, "broker-a")
	if resp.Field("wipeTopicCount") != "2" {
		t.Fatalf("wipeTopicCount %q, want 2", resp.Field("wipeTopicCount"))
	}
	if p := permOf("T", "broker-a"); p&meta.PermWrite != 0 || p&meta.PermRead == 0 {
		t.Fatalf("wiped broker-a: perm %d", p)
	}
	if p := permOf("T", "broker-b"); p&meta.PermWrite == 0 {
		t.Fatalf("broker-b lost its write permission: %d", p)
	}
	// The broker's periodic registration with the same topic configuration
	// (the same DataVersion) keeps the wipe.
	mustRegister(t, r, master("broker-a", "10.0.0.1:10911"), t0, topic("T", 4), topic("A", 1))
	if p := permOf("A", "broker-a"); p&meta.PermWrite != 0 {
		t.Fatalf("a re-registration undid the wipe: perm %d", p)
	}
	// A changed topic configuration (a new DataVersion) ends it, as in RocketMQ.
	mustRegister(t, r, master("broker-a", "10.0.0.1:10911"), t0.Add(time.Second), topic("T", 4), topic("A", 1))
	if p := permOf("A", "broker-a"); p&meta.PermWrite == 0 {
		t.Fatalf("a new topic configuration kept the wipe: perm %d", p)
	}
	call(remoting.WipeWritePermOfBroker, "broker-a")
	resp = call(remoting.AddWritePermOfBroker, "broker-a")
	if resp.Field("addTopicCount") != "2" || permOf("A", "broker-a")&meta.PermWrite == 0 {
		t.Fatalf("after add: count %q perm %d", resp.Field("addTopicCount"), permOf("A", "broker-a"))
	}
	if resp := handle(r, remoting.NewRequest(remoting.WipeWritePermOfBroker, nil, nil), t0); resp.Code != remoting.SystemError {
		t.Fatalf("wipe without brokerName: code %d", resp.Code)
	}
	if resp := call(remoting.WipeWritePermOfBroker, "no-such-broker"); resp.Field("wipeTopicCount") != "0" {
		t.Fatalf("unknown broker: %v", resp.ExtFields)
	}
}
