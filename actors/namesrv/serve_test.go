package namesrv

import "testing"

// unknownCall is a Call the registry does not serve.
type unknownCall struct{}

func (unknownCall) Code() int32 { return 4242 }

// Serve answers what it does not serve Unsupported and a nil call Failed,
// and changes nothing either way.
func TestServeRefusals(t *testing.T) {
	r := NewRegistry()
	twoBrokers(t, r)
	before := r.Brokers()
	for _, c := range []struct {
		call   Call
		status Status
		remark string
	}{
		{nil, Failed, "namesrv: nil request"},
		{unknownCall{}, Unsupported, " request type 4242 not supported"},
		{GetConfig{}, Unsupported, " request type 319 not supported"},
		{GetRoute{Topic: "nope"}, TopicNotFound, "No topic route info in name server for the topic: nope"},
		{GetKV{Namespace: "ns", Key: "k"}, NotFound, "No config item, Namespace: ns Key: k"},
		{RegisterBroker{Info: master("broker-c", "10.0.0.9:1"), Body: []byte("{")}, Failed, ""},
	} {
		ans := r.Serve(c.call, t0, 0)
		if ans.Status != c.status || (c.remark != "" && ans.Remark != c.remark) {
			t.Errorf("%T: %v %q, want %v %q", c.call, ans.Status, ans.Remark, c.status, c.remark)
		}
	}
	if after := r.Brokers(); len(after) != len(before) {
		t.Errorf("brokers %d -> %d", len(before), len(after))
	}
	if Status(200).String() != "UNKNOWN" || Fenced.String() != "FENCED" {
		t.Error("status names")
	}
}
