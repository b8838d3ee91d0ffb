package nsrvcodec

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func TestTopicLists(t *testing.T) {
	r := namesrv.NewRegistry()
	empty := handle(r, remoting.NewRequest(remoting.GetSystemTopicListFromNS, nil, nil), t0)
	if empty.Code != remoting.Success || string(empty.Body) != `{"topicList":[]}` {
		t.Fatalf("304 with no broker: %d %s", empty.Code, empty.Body)
	}
	twoBrokers(t, r)
	var tl namesrv.TopicList
	resp := handle(r, remoting.NewRequest(remoting.GetSystemTopicListFromNS, nil, nil), t0)
	if err := json.Unmarshal(resp.Body, &tl); err != nil || resp.Code != remoting.Success {
		t.Fatalf("304: %d %s %v", resp.Code, resp.Body, err)
	}
	if !slices.Equal(tl.TopicList, []string{"DefaultCluster", "broker-a", "broker-b"}) || tl.BrokerAddr != "10.0.0.1:10911" {
		t.Fatalf("304: %+v", tl)
	}

	tests := []struct {
		fields map[string]string
		code   int32
		want   []string
	}{
		{map[string]string{"cluster": "DefaultCluster"}, remoting.Success, []string{"A", "B", "T"}},
		{map[string]string{"cluster": "nowhere"}, remoting.Success, []string{}},
		{nil, remoting.SystemError, nil},
	}
	for _, tt := range tests {
		resp := handle(r, remoting.NewRequest(remoting.GetTopicsByCluster, tt.fields, nil), t0)
		if resp.Code != tt.code {
			t.Fatalf("224 %v: code %d %q", tt.fields, resp.Code, resp.Remark)
		}
		if tt.code != remoting.Success {
			continue
		}
		tl = namesrv.TopicList{}
		if err := json.Unmarshal(resp.Body, &tl); err != nil || !slices.Equal(tl.TopicList, tt.want) {
			t.Fatalf("224 %v: %s (%v), want %v", tt.fields, resp.Body, err, tt.want)
		}
	}
}
