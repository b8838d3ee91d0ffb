package nsrvcodec

import (
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// BenchmarkHandleRoute is a client's route lookup, frame to frame: decode
// GET_ROUTEINFO_BY_TOPIC, Registry.Serve, encode the route JSON (what the
// stage does per lookup, without the mailbox).
func BenchmarkHandleRoute(b *testing.B) {
	r := namesrv.NewRegistry()
	mustRegister(b, r, master("broker-a", "10.0.0.1:10911"), t0, topic("T", 4), topic("A", 1))
	mustRegister(b, r, slave("broker-a", "10.0.0.2:10911", 1), t0, topic("T", 4), topic("A", 1))
	mustRegister(b, r, master("broker-b", "10.0.0.3:10911"), t0, topic("T", 2), topic("B", 8))
	req := routeReq("T")
	b.ReportAllocs()
	for b.Loop() {
		if resp := Handle(r, req, t0, 0); resp.Code != remoting.Success {
			b.Fatal(resp.Code)
		}
	}
}

// BenchmarkHandleRegister is a broker's periodic REGISTER_BROKER of 64
// topics, frame to frame.
func BenchmarkHandleRegister(b *testing.B) {
	r := namesrv.NewRegistry()
	tcs := topics()
	for i := range 64 {
		tc := topic("topic-"+string(rune('a'+i%26))+string(rune('a'+i/26)), 8)
		tcs[tc.TopicName] = tc
	}
	req, err := NewRegisterRequest(master("broker-a", "10.0.0.1:10911"), tcs, namesrv.DataVersion{Counter: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if resp := Handle(r, req, t0, 0); resp.Code != remoting.Success {
			b.Fatal(resp.Code, resp.Remark)
		}
	}
}
