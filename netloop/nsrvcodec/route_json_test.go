package nsrvcodec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// The types and functions below replicate rocketmq-client-go/v2
// internal/route.go (TopicRouteData.decode and the publish-info builder),
// which live in an internal package we cannot import.

type clientQueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
	TopicSynFlag   int    `json:"topicSynFlag"`
}

type clientBrokerData struct {
	Cluster         string
	BrokerName      string
	BrokerAddresses map[int64]string
}

type clientRoute struct {
	OrderTopicConf string
	QueueDataList  []clientQueueData
	BrokerDataList []clientBrokerData
}

// clientDecode is TopicRouteData.decode: queueDatas with a JSON decoder,
// brokerDatas field by field, brokerAddrs by slicing its raw text between
// the first and last character, splitting on "," and each piece at the
// first ":", quotes removed.
func clientDecode(data []byte) (*clientRoute, error) {
	var doc struct {
		OrderTopicConf string            `json:"orderTopicConf"`
		QueueDatas     []clientQueueData `json:"queueDatas"`
		BrokerDatas    []struct {
			BrokerName  string          `json:"brokerName"`
			Cluster     string          `json:"cluster"`
			BrokerAddrs json.RawMessage `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	rd := &clientRoute{OrderTopicConf: doc.OrderTopicConf, QueueDataList: doc.QueueDatas}
	for _, v := range doc.BrokerDatas {
		bd := clientBrokerData{BrokerName: v.BrokerName, Cluster: v.Cluster, BrokerAddresses: map[int64]string{}}
		addrs := string(v.BrokerAddrs)
		if len(addrs) < 2 {
			return nil, fmt.Errorf("brokerAddrs %q: the client would panic slicing it", addrs)
		}
		for _, str := range strings.Split(addrs[1:len(addrs)-1], ",") {
			i := strings.Index(str, ":")
			if i < 0 {
				continue
			}
			id, _ := strconv.ParseInt(strings.ReplaceAll(str[0:i], "\"", ""), 10, 64)
			bd.BrokerAddresses[id] = strings.ReplaceAll(str[i+1:], "\"", "")
		}
		rd.BrokerDataList = append(rd.BrokerDataList, bd)
	}
	return rd, nil
}

// clientPublishQueues is the Go client's route-to-publish-info step: queue
// datas sorted by broker name, non-writable ones and brokers without a
// master address skipped, then one queue per write queue.
func clientPublishQueues(topic string, rd *clientRoute) []string {
	qds := slices.Clone(rd.QueueDataList)
	slices.SortFunc(qds, func(a, b clientQueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	var out []string
	for _, qd := range qds {
		if qd.Perm&int(meta.PermWrite) == 0 {
			continue
		}
		masterOK := false
		for _, bd := range rd.BrokerDataList {
			if bd.BrokerName == qd.BrokerName && bd.BrokerAddresses[0] != "" {
				masterOK = true
			}
		}
		if !masterOK {
			continue
		}
		for i := range qd.WriteQueueNums {
			out = append(out, fmt.Sprintf("%s@%s#%d", topic, qd.BrokerName, i))
		}
	}
	return out
}

// TestClientDecodeReplica shows the replica reproduces the documented client
// quirk, so the route test below can fail.
func TestClientDecodeReplica(t *testing.T) {
	tests := []struct {
		body string
		want string
	}{
		{`{"queueDatas":[],"brokerDatas":[{"brokerName":"b","cluster":"c","brokerAddrs":{"0":"a:1"}}]}`, "a:1"},
		{`{"queueDatas":[],"brokerDatas":[{"brokerName":"b","cluster":"c","brokerAddrs":{0:"a:1"}}]}`, ""},
		{`{"queueDatas":[],"brokerDatas":[{"brokerName":"b","cluster":"c","brokerAddrs":{"0": "a:1"}}]}`, " a:1"},
	}
	for _, tc := range tests {
		rd, err := clientDecode([]byte(tc.body))
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s: the stdlib replica accepted non-standard JSON", tc.body)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if got := rd.BrokerDataList[0].BrokerAddresses[0]; got != tc.want {
			t.Errorf("%s: addr %q, want %q", tc.body, got, tc.want)
		}
	}
}

// TestRouteJSONAsGoClientParsesIt feeds GET_ROUTEINFO_BY_TOPIC bodies to the
// client's parsing algorithm.
func TestRouteJSONAsGoClientParsesIt(t *testing.T) {
	r := namesrv.NewRegistry()
	mustRegister(t, r, master("broker-b", "[::1]:10911"), t0, topic("T", 2))
	mustRegister(t, r, master("broker-a", "10.0.0.1:10911"), t0, topic("T", 3))
	mustRegister(t, r, slave("broker-a", "10.0.0.2:10911", 1), t0, topic("T", 3))
	mustRegister(t, r, slave("broker-a", "10.0.0.5:10911", 2), t0, topic("T", 3))
	ro := topic("T", 5)
	ro.Perm = meta.PermRead
	mustRegister(t, r, master("broker-c", "host-c:10911"), t0, ro)
	mustRegister(t, r, slave("broker-d", "10.0.0.9:10911", 1), t0, topic("T", 7)) // no master

	resp := handle(r, routeReq("T"), t0)
	if resp.Code != remoting.Success || resp.Body == nil {
		t.Fatalf("code %d body %q", resp.Code, resp.Body)
	}
	if !json.Valid(resp.Body) {
		t.Fatalf("invalid JSON %s", resp.Body)
	}
	if i := bytes.IndexAny(resp.Body, " \t\r\n"); i >= 0 {
		t.Fatalf("white space at %d in %s", i, resp.Body)
	}
	rd, err := clientDecode(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	wantAddrs := map[string]map[int64]string{
		"broker-a": {0: "10.0.0.1:10911", 1: "10.0.0.2:10911", 2: "10.0.0.5:10911"},
		"broker-b": {0: "[::1]:10911"},
		"broker-c": {0: "host-c:10911"},
		"broker-d": {1: "10.0.0.9:10911"},
	}
	if len(rd.BrokerDataList) != len(wantAddrs) {
		t.Fatalf("broker datas %+v", rd.BrokerDataList)
	}
	for _, bd := range rd.BrokerDataList {
		if !reflect.DeepEqual(bd.BrokerAddresses, wantAddrs[bd.BrokerName]) || bd.Cluster != "DefaultCluster" {
			t.Errorf("%s: %+v", bd.BrokerName, bd)
		}
	}
	names := []string{}
	for _, qd := range rd.QueueDataList {
		names = append(names, qd.BrokerName)
	}
	if !slices.IsSorted(names) || len(names) != 4 {
		t.Errorf("queueDatas not sorted by broker name: %v", names)
	}
	got := clientPublishQueues("T", rd)
	want := []string{"T@broker-a#0", "T@broker-a#1", "T@broker-a#2", "T@broker-b#0", "T@broker-b#1"}
	if !slices.Equal(got, want) {
		t.Errorf("publish queues %v, want %v", got, want)
	}
}

// TestRouteGolden pins the exact route bytes (Java's standard-JSON shape).
func TestRouteGolden(t *testing.T) {
	r := namesrv.NewRegistry()
	twoBrokers(t, r)
	resp := handle(r, routeReq("T"), t0)
	golden(t, "route_two_brokers.json", resp.Body)
	rd, err := namesrv.ParseRouteData(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	again, err := namesrv.CompactJSON(rd)
	if err != nil || !bytes.Equal(again, resp.Body) {
		t.Errorf("round trip %s, err %v", again, err)
	}
}
