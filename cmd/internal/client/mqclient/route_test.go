package mqclient

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestParseRoute(t *testing.T) {
	tests := []struct {
		name string
		body string
		addr string // master address of broker-a, "" for an error
	}{
		{"standard", `{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"C"}],"queueDatas":[]}`, "10.0.0.1:10911"},
		{"fastjson bare keys", `{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"C"}],"queueDatas":[]}`, "10.0.0.1:10911"},
		{"bare keys with spaces", `{"brokerDatas":[{"brokerAddrs":{ 0 : "10.0.0.1:10911" , -1: "x:1"},"brokerName":"broker-a"}]}`, "10.0.0.1:10911"},
		{"digits inside strings untouched", `{"brokerDatas":[{"brokerAddrs":{"0":"{0:1,2:3}"},"brokerName":"broker-a"}]}`, "{0:1,2:3}"},
		{"extra fields", `{"orderTopicConf":"","filterServerTable":{},"topicQueueMappingByBroker":null,"brokerDatas":[{"brokerAddrs":{"0":"h:1"},"brokerName":"broker-a","enableActingMaster":false,"zoneName":"z"}],"queueDatas":[]}`, "h:1"},
		{"not JSON", `garbage`, ""},
		{"empty", ``, ""},
		{"wrong type", `{"brokerDatas":"x"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRoute([]byte(tt.body))
			if tt.addr == "" {
				if !errors.Is(err, ErrBadRoute) {
					t.Fatalf("err %v, want ErrBadRoute", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.BrokerDatas[0].BrokerAddrs[MasterID]; got != tt.addr {
				t.Fatalf("master %q, want %q", got, tt.addr)
			}
		})
	}
}

func TestPublishRoute(t *testing.T) {
	r := &TopicRouteData{
		QueueDatas: []QueueData{
			{BrokerName: "c", WriteQueueNums: 2, ReadQueueNums: 2, Perm: PermRead | PermWrite},
			{BrokerName: "a", WriteQueueNums: 3, ReadQueueNums: 3, Perm: PermRead | PermWrite},
			{BrokerName: "ro", WriteQueueNums: 4, ReadQueueNums: 4, Perm: PermRead},
			{BrokerName: "slaveonly", WriteQueueNums: 4, ReadQueueNums: 4, Perm: PermRead | PermWrite},
			{BrokerName: "b", WriteQueueNums: 1, ReadQueueNums: 8, Perm: PermWrite | PermInherit},
		},
		BrokerDatas: []BrokerData{
			{BrokerName: "a", BrokerAddrs: map[string]string{"0": "a:1", "1": "a:2"}},
			{BrokerName: "b", BrokerAddrs: map[string]string{"0": "b:1"}},
			{BrokerName: "c", BrokerAddrs: map[string]string{"0": "c:1"}},
			{BrokerName: "ro", BrokerAddrs: map[string]string{"0": "ro:1"}},
			{BrokerName: "slaveonly", BrokerAddrs: map[string]string{"1": "s:2"}},
		},
	}
	pub := r.Publish("T")
	var got []string
	for _, q := range pub.Queues {
		got = append(got, q.String())
	}
	want := []string{"T@a#0", "T@a#1", "T@a#2", "T@b#0", "T@c#0", "T@c#1"}
	if !slices.Equal(got, want) {
		t.Fatalf("queues %v, want %v", got, want)
	}
	if len(pub.Brokers) != 3 || pub.Brokers["a"] != "a:1" || pub.Brokers["b"] != "b:1" || pub.Brokers["c"] != "c:1" {
		t.Fatalf("brokers %v", pub.Brokers)
	}
	if !slices.Equal(pub.Masterless, []string{"slaveonly"}) {
		t.Fatalf("masterless %v, want [slaveonly] (writable queues, replicas only)", pub.Masterless)
	}
	r.OrderTopicConf = "c:1;a:2;bad;ro:x"
	got = got[:0]
	for _, q := range r.Publish("T").Queues {
		got = append(got, q.String())
	}
	if want := []string{"T@c#0", "T@a#0", "T@a#1"}; !slices.Equal(got, want) {
		t.Fatalf("order topic queues %v, want %v", got, want)
	}
	capped := r.capQueues(2)
	if capped.QueueDatas[1].WriteQueueNums != 2 || capped.QueueDatas[4].ReadQueueNums != 2 || r.QueueDatas[1].WriteQueueNums != 3 {
		t.Fatalf("capQueues: %+v (original %+v)", capped.QueueDatas, r.QueueDatas)
	}
}

func FuzzQuoteNumericKeys(f *testing.F) {
	for _, s := range []string{
		`{"brokerAddrs":{0:"a:1",1:"b:2"}}`, `{ 0 : 1 }`, `[0,1,{2:3}]`, `{"a":"{0:1}"}`, `{-1:"x"}`,
		`{"esc":"\"{0:1}"}`, `{0:{1:{2:[3,{4:5}]}}}`, ``, `{`, `}`, `"`, `{-:1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, changed := quoteNumericKeys(b)
		if !changed && string(out) != string(b) {
			t.Fatalf("unchanged input %q came back as %q", b, out)
		}
		if json.Valid(b) && changed {
			t.Fatalf("valid JSON %q was changed to %q", b, out)
		}
		var v any
		if changed && json.Unmarshal(out, &v) == nil {
			// The fixed text is valid; quoting again must be a no-op.
			if again, c := quoteNumericKeys(out); c || string(again) != string(out) {
				t.Fatalf("second pass changed %q to %q", out, again)
			}
		}
		_, _ = ParseRoute(b) // must not panic
	})
}

func TestOlderLookupDoesNotReplaceNewer(t *testing.T) {
	rt := routeTable{m: map[string]*routeEntry{}}
	t0 := time.Now()
	older, newer := &PublishRoute{Topic: "old"}, &PublishRoute{Topic: "new"}
	rt.storeLocked("T", newer, t0.Add(time.Second))
	rt.storeLocked("T", older, t0) // began earlier, answered later
	if got := rt.m["T"].pub; got != newer {
		t.Fatalf("cached %q, want the answer of the later lookup", got.Topic)
	}
	rt.storeLocked("T", older, t0.Add(2*time.Second))
	if got := rt.m["T"].pub; got != older {
		t.Fatalf("cached %q, want the answer of the latest lookup", got.Topic)
	}
}
