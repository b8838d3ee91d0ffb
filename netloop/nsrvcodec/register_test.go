package nsrvcodec

import (
	"errors"
	"hash/crc32"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

func TestNewRegisterRequest(t *testing.T) {
	info := namesrv.BrokerInfo{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: "127.0.0.1:10911",
		HAServerAddr: "127.0.0.1:10912", HeartbeatTimeout: 30 * time.Second}
	tbw := meta.TopicConfig{TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: "SINGLE_TAG"}
	req, err := NewRegisterRequest(info, topics(tbw, topic("orders", 4)),
		namesrv.DataVersion{Timestamp: 1700000000000, Counter: 2})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "register_body.json", req.Body)
	want := map[string]string{
		"clusterName": "DefaultCluster", "brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911",
		"brokerId": "0", "haServerAddr": "127.0.0.1:10912", "heartbeatTimeoutMillis": "30000",
		"enableActingMaster": "false", "compressed": "false",
		"bodyCrc32": strconv.FormatUint(uint64(crc32.ChecksumIEEE(req.Body)&0x7fffffff), 10),
	}
	if req.Code != remoting.RegisterBroker || len(req.ExtFields) != len(want) {
		t.Fatalf("code %d fields %v", req.Code, req.ExtFields)
	}
	for k, v := range want {
		if req.Field(k) != v {
			t.Errorf("%s = %q, want %q", k, req.Field(k), v)
		}
	}

	r := namesrv.NewRegistry()
	if resp := handle(r, req, t0); resp.Code != remoting.Success {
		t.Fatalf("register: %d %s", resp.Code, resp.Remark)
	}
	b := r.Brokers()[0]
	if b.Timeout != 30*time.Second || b.DataVersion.Counter != 2 || !b.Topics["TBW102"].Equal(tbw) {
		t.Errorf("entry %+v", b)
	}
	if resp := handle(r, NewUnregisterRequest(info), t0); resp.Code != remoting.Success || r.Len() != 0 {
		t.Errorf("unregister: %d, %d left", resp.Code, r.Len())
	}
}

func TestNewRegisterRequestInvalid(t *testing.T) {
	tests := []struct {
		name   string
		info   namesrv.BrokerInfo
		topics map[string]meta.TopicConfig
		want   error
	}{
		{"no cluster", namesrv.BrokerInfo{BrokerName: "b", BrokerAddr: "h:1"}, nil, namesrv.ErrMissingField},
		{"comma addr", namesrv.BrokerInfo{Cluster: "c", BrokerName: "b", BrokerAddr: "h:1,h:2"}, nil, namesrv.ErrInvalidValue},
		{"bad topic", namesrv.BrokerInfo{Cluster: "c", BrokerName: "b", BrokerAddr: "h:1"},
			map[string]meta.TopicConfig{"T": {ReadQueueNums: -1}}, namesrv.ErrInvalidValue},
	}
	for _, tc := range tests {
		if _, err := NewRegisterRequest(tc.info, tc.topics, namesrv.DataVersion{}); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
	// No topics and no HA address: fields omitted, empty table sent.
	req, err := NewRegisterRequest(namesrv.BrokerInfo{Cluster: "c", BrokerName: "b", BrokerAddr: "h:1", BrokerID: 3}, nil, namesrv.DataVersion{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := req.ExtFields["haServerAddr"]; ok || req.Field("brokerId") != "3" {
		t.Errorf("fields %v", req.ExtFields)
	}
	if _, ok := req.ExtFields["heartbeatTimeoutMillis"]; ok {
		t.Errorf("fields %v", req.ExtFields)
	}
}

func TestParseRouteData(t *testing.T) {
	rd, err := namesrv.ParseRouteData(readTestdata(t, "route_two_brokers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rd.BrokerDatas) != 2 || rd.BrokerDatas[0].BrokerAddrs[0] != "10.0.0.1:10911" ||
		rd.QueueDatas[1] != (namesrv.QueueData{BrokerName: "broker-b", Perm: 6, ReadQueueNums: 2, WriteQueueNums: 2}) {
		t.Errorf("route %+v", rd)
	}
	for _, bad := range []string{"", "{", `{"queueDatas":{}}`, `{"brokerDatas":[{"brokerAddrs":{"x":"a"}}]}`} {
		if _, err := namesrv.ParseRouteData([]byte(bad)); !errors.Is(err, namesrv.ErrBadBody) {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}
