package nsrvcodec

import (
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv/namesrvtest"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// twoBrokers registers broker-a (master + slave) with topics T (4 queues)
// and A, and broker-b (master) with T (2 queues) and B.
func twoBrokers(t *testing.T, r *namesrv.Registry) {
	t.Helper()
	mustRegister(t, r, master("broker-a", "10.0.0.1:10911"), t0, topic("T", 4), topic("A", 1))
	mustRegister(t, r, slave("broker-a", "10.0.0.2:10911", 1), t0, topic("T", 4), topic("A", 1))
	mustRegister(t, r, master("broker-b", "10.0.0.3:10911"), t0, topic("T", 2), topic("B", 8))
}

func hasRoute(r *namesrv.Registry, topic string) bool {
	_, ok := r.Route(topic)
	return ok
}

func TestHandle(t *testing.T) {
	javaBody := readTestdata(t, "register_body_java.json")
	compressed := namesrvtest.JavaCompressedBody(t)
	unmasked := crc32.ChecksumIEEE(javaBody)

	tests := []struct {
		name   string
		setup  func(t *testing.T, r *namesrv.Registry)
		req    *remoting.Command
		code   int32
		remark string // substring of the remark; "" checks nothing
		check  func(t *testing.T, r *namesrv.Registry, resp *remoting.Command)
	}{
		{
			name: "register master with java json body",
			req:  registerCmd(nil, javaBody),
			code: remoting.Success,
			check: func(t *testing.T, r *namesrv.Registry, resp *remoting.Command) {
				if resp.Body != nil { // no ORDER_TOPIC_CONFIG namespace: no KVTable (Java's null)
					t.Errorf("body %s", resp.Body)
				}
				if resp.Field("masterAddr") != "" || resp.Field("haServerAddr") != "" {
					t.Errorf("master got master fields %v", resp.ExtFields)
				}
				if got := r.TopicNames(); strings.Join(got, ",") != "%RETRY%group-1,TBW102,orders" {
					t.Errorf("topics %v", got)
				}
				if b := r.Brokers()[0]; b.DataVersion != (namesrv.DataVersion{Timestamp: 1700000000000, Counter: 3}) ||
					b.Timeout != namesrv.DefaultHeartbeatTimeout || b.HAServerAddr != "127.0.0.1:10912" {
					t.Errorf("entry %+v", b)
				}
			},
		},
		{
			name: "register slave learns master",
			setup: func(t *testing.T, r *namesrv.Registry) {
				mustRegister(t, r, master("broker-a", "10.0.0.1:10911"), t0, topic("T", 4))
			},
			req:  registerCmd(map[string]string{"brokerId": "1", "brokerAddr": "10.0.0.2:10911"}, javaBody),
			code: remoting.Success,
			check: func(t *testing.T, r *namesrv.Registry, resp *remoting.Command) {
				if resp.Field("masterAddr") != "10.0.0.1:10911" || resp.Field("haServerAddr") != "10.0.0.1:109110" {
					t.Errorf("fields %v", resp.ExtFields)
				}
			},
		},
		{
			name: "register compressed body",
			req:  registerCmd(map[string]string{"compressed": "true"}, compressed),
			code: remoting.Success,
			check: func(t *testing.T, r *namesrv.Registry, _ *remoting.Command) {
				rd, ok := r.Route("orders")
				if !ok || rd.QueueDatas[0].WriteQueueNums != 4 || rd.QueueDatas[0].Perm != 6 {
					t.Errorf("route %+v", rd)
				}
			},
		},
		{
			name: "register empty body",
			req:  registerCmd(nil, nil),
			code: remoting.Success,
			check: func(t *testing.T, r *namesrv.Registry, _ *remoting.Command) {
				if r.Len() != 1 || len(r.TopicNames()) != 0 {
					t.Errorf("len %d topics %v", r.Len(), r.TopicNames())
				}
			},
		},
		{
			name: "register heartbeat timeout header",
			req:  registerCmd(map[string]string{"heartbeatTimeoutMillis": "30000"}, javaBody),
			code: remoting.Success,
			check: func(t *testing.T, r *namesrv.Registry, _ *remoting.Command) {
				if got := r.Brokers()[0].Timeout.Seconds(); got != 30 {
					t.Errorf("timeout %vs", got)
				}
			},
		},
		{name: "register crc unmasked", code: remoting.Success,
			req: registerCmd(map[string]string{"bodyCrc32": strconv.FormatUint(uint64(unmasked), 10)}, javaBody)},
		{name: "register crc signed", code: remoting.Success,
			req: registerCmd(map[string]string{"bodyCrc32": strconv.Itoa(int(int32(unmasked)))}, javaBody)},
		{name: "register crc absent", code: remoting.Success,
			req: registerCmd(map[string]string{"bodyCrc32": "<absent>"}, javaBody)},
		{name: "register crc mismatch", code: remoting.SystemError, remark: "crc32 not match",
			req: registerCmd(map[string]string{"bodyCrc32": "12345"}, javaBody)},
		{name: "register crc not a number", code: remoting.SystemError, remark: "bodyCrc32",
			req: registerCmd(map[string]string{"bodyCrc32": "0x12"}, javaBody)},
		{name: "register missing cluster", code: remoting.SystemError, remark: "<clusterName> is null",
			req: registerCmd(map[string]string{"clusterName": "<absent>"}, javaBody)},
		{name: "register missing broker name", code: remoting.SystemError, remark: "<brokerName> is null",
			req: registerCmd(map[string]string{"brokerName": ""}, javaBody)},
		{name: "register missing broker addr", code: remoting.SystemError, remark: "<brokerAddr> is null",
			req: registerCmd(map[string]string{"brokerAddr": "<absent>"}, javaBody)},
		{name: "register missing broker id", code: remoting.SystemError, remark: "<brokerId> is null",
			req: registerCmd(map[string]string{"brokerId": "<absent>"}, javaBody)},
		{name: "register broker id not a number", code: remoting.SystemError, remark: "brokerId",
			req: registerCmd(map[string]string{"brokerId": "one"}, javaBody)},
		{name: "register negative broker id", code: remoting.InvalidParameter, remark: "brokerId -1",
			req: registerCmd(map[string]string{"brokerId": "-1"}, javaBody)},
		{name: "register addr with comma", code: remoting.InvalidParameter, remark: "brokerAddr",
			req: registerCmd(map[string]string{"brokerAddr": "10.0.0.1:1,10.0.0.2:2"}, javaBody)},
		{name: "register addr with space", code: remoting.InvalidParameter, remark: "brokerAddr",
			req: registerCmd(map[string]string{"brokerAddr": " 10.0.0.1:1"}, javaBody)},
		{name: "register ha addr with quote", code: remoting.InvalidParameter, remark: "haServerAddr",
			req: registerCmd(map[string]string{"haServerAddr": `a"b`}, javaBody)},
		{name: "register timeout not a number", code: remoting.SystemError, remark: "heartbeatTimeoutMillis",
			req: registerCmd(map[string]string{"heartbeatTimeoutMillis": "soon"}, javaBody)},
		{name: "register timeout zero", code: remoting.InvalidParameter, remark: "heartbeatTimeoutMillis",
			req: registerCmd(map[string]string{"heartbeatTimeoutMillis": "0"}, javaBody)},
		{name: "register bad json", code: remoting.SystemError, remark: "register broker body",
			req: registerCmd(nil, []byte(`{"topicConfigSerializeWrapper":`))},
		{name: "register wrong json type", code: remoting.SystemError, remark: "register broker body",
			req: registerCmd(nil, []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":"rw"}}}}`))},
		{name: "register negative queues", code: remoting.InvalidParameter, remark: "negative queue",
			req: registerCmd(nil, []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"readQueueNums":-1}}}}`))},
		{name: "register compressed garbage", code: remoting.SystemError, remark: "compressed body",
			req: registerCmd(map[string]string{"compressed": "true"}, []byte("not zlib"))},
		{name: "register compressed but json", code: remoting.SystemError, remark: "compressed body",
			req: registerCmd(map[string]string{"compressed": "true"}, javaBody)},
		{
			name:  "unregister",
			setup: twoBrokers,
			req: remoting.NewRequest(remoting.UnregisterBroker, map[string]string{"clusterName": "DefaultCluster",
				"brokerName": "broker-b", "brokerAddr": "10.0.0.3:10911", "brokerId": "0"}, nil),
			code: remoting.Success,
			check: func(t *testing.T, r *namesrv.Registry, _ *remoting.Command) {
				if r.Len() != 2 || hasRoute(r, "B") || !hasRoute(r, "T") {
					t.Errorf("len %d topics %v", r.Len(), r.TopicNames())
				}
			},
		},
		{
			name:  "unregister old address keeps successor",
			setup: twoBrokers,
			req: remoting.NewRequest(remoting.UnregisterBroker, map[string]string{"clusterName": "DefaultCluster",
				"brokerName": "broker-b", "brokerAddr": "10.9.9.9:10911", "brokerId": "0"}, nil),
			code: remoting.Success,
			check: func(t *testing.T, r *namesrv.Registry, _ *remoting.Command) {
				if r.Len() != 3 {
					t.Errorf("len %d", r.Len())
				}
			},
		},
		{name: "unregister unknown broker", code: remoting.Success,
			req: remoting.NewRequest(remoting.UnregisterBroker, map[string]string{"clusterName": "c",
				"brokerName": "x", "brokerAddr": "h:1", "brokerId": "0"}, nil)},
		{name: "unregister missing addr", code: remoting.SystemError, remark: "<brokerAddr> is null",
			req: remoting.NewRequest(remoting.UnregisterBroker, map[string]string{"clusterName": "c",
				"brokerName": "x", "brokerId": "0"}, nil)},
		{name: "unregister missing id", code: remoting.SystemError, remark: "<brokerId> is null",
			req: remoting.NewRequest(remoting.UnregisterBroker, map[string]string{"clusterName": "c",
				"brokerName": "x", "brokerAddr": "h:1"}, nil)},
		{
			name: "route", setup: twoBrokers, req: routeReq("T"), code: remoting.Success,
			check: func(t *testing.T, _ *namesrv.Registry, resp *remoting.Command) {
				rd, err := namesrv.ParseRouteData(resp.Body)
				if err != nil || len(rd.QueueDatas) != 2 || rd.QueueDatas[0].BrokerName != "broker-a" ||
					rd.BrokerDatas[0].BrokerAddrs[1] != "10.0.0.2:10911" {
					t.Errorf("route %+v err %v", rd, err)
				}
			},
		},
		{name: "route unknown topic", setup: twoBrokers, req: routeReq("nope"), code: remoting.TopicNotExist,
			check: func(t *testing.T, _ *namesrv.Registry, resp *remoting.Command) {
				if resp.Remark != "No topic route info in name server for the topic: nope" || resp.Body != nil {
					t.Errorf("remark %q body %q", resp.Remark, resp.Body)
				}
			}},
		{name: "route empty registry", req: routeReq("T"), code: remoting.TopicNotExist},
		{name: "route missing topic", req: remoting.NewRequest(remoting.GetRouteInfoByTopic, nil, nil),
			code: remoting.SystemError, remark: "<topic> is null"},
		{name: "route nil ext fields", req: &remoting.Command{Code: remoting.GetRouteInfoByTopic},
			code: remoting.SystemError, remark: "<topic> is null"},
		{
			name: "cluster info", setup: twoBrokers, code: remoting.Success,
			req: remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil),
			check: func(t *testing.T, _ *namesrv.Registry, resp *remoting.Command) {
				golden(t, "cluster_info.json", resp.Body)
			},
		},
		{
			name: "cluster info empty", code: remoting.Success,
			req: remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil),
			check: func(t *testing.T, _ *namesrv.Registry, resp *remoting.Command) {
				if string(resp.Body) != `{"brokerAddrTable":{},"clusterAddrTable":{}}` {
					t.Errorf("body %s", resp.Body)
				}
			},
		},
		{
			name: "topic list", setup: twoBrokers, code: remoting.Success,
			req: remoting.NewRequest(remoting.GetAllTopicListFromNameserver, nil, nil),
			check: func(t *testing.T, _ *namesrv.Registry, resp *remoting.Command) {
				if string(resp.Body) != `{"topicList":["A","B","T"]}` {
					t.Errorf("body %s", resp.Body)
				}
			},
		},
		{
			name: "topic list empty", code: remoting.Success,
			req: remoting.NewRequest(remoting.GetAllTopicListFromNameserver, nil, nil),
			check: func(t *testing.T, _ *namesrv.Registry, resp *remoting.Command) {
				if string(resp.Body) != `{"topicList":[]}` {
					t.Errorf("body %s", resp.Body)
				}
			},
		},
		{
			name: "delete topic", setup: twoBrokers, code: remoting.Success,
			req: remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": "T"}, nil),
			check: func(t *testing.T, r *namesrv.Registry, _ *remoting.Command) {
				if hasRoute(r, "T") || !hasRoute(r, "A") {
					t.Errorf("topics %v", r.TopicNames())
				}
			},
		},
		{
			name: "delete topic other cluster", setup: twoBrokers, code: remoting.Success,
			req: remoting.NewRequest(remoting.DeleteTopicInNamesrv,
				map[string]string{"topic": "T", "clusterName": "OtherCluster"}, nil),
			check: func(t *testing.T, r *namesrv.Registry, _ *remoting.Command) {
				if !hasRoute(r, "T") {
					t.Error("topic deleted in the wrong cluster")
				}
			},
		},
		{name: "delete topic missing topic", code: remoting.SystemError, remark: "<topic> is null",
			req: remoting.NewRequest(remoting.DeleteTopicInNamesrv, nil, nil)},
		{name: "unsupported code", code: remoting.RequestCodeNotSupported,
			req: remoting.NewRequest(remoting.SendMessage, nil, nil),
			check: func(t *testing.T, _ *namesrv.Registry, resp *remoting.Command) {
				if resp.Remark != " request type 10 not supported" {
					t.Errorf("remark %q", resp.Remark)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := namesrv.NewRegistry()
			if tc.setup != nil {
				tc.setup(t, r)
			}
			tc.req.Opaque = 99
			resp := handle(r, tc.req, t0)
			if resp.Code != tc.code {
				t.Fatalf("code %d, want %d (remark %q)", resp.Code, tc.code, resp.Remark)
			}
			if !strings.Contains(resp.Remark, tc.remark) {
				t.Errorf("remark %q does not contain %q", resp.Remark, tc.remark)
			}
			if resp.Opaque != 99 || !resp.IsResponse() {
				t.Errorf("opaque %d flag %d", resp.Opaque, resp.Flag)
			}
			// Routes, cluster info and topic lists always carry a body.
			bodyCodes := []int32{remoting.GetRouteInfoByTopic, remoting.GetBrokerClusterInfo, remoting.GetAllTopicListFromNameserver}
			if tc.code == remoting.Success && slices.Contains(bodyCodes, tc.req.Code) && len(resp.Body) == 0 {
				t.Error("success without body")
			}
			if tc.check != nil {
				tc.check(t, r, resp)
			}
		})
	}
}

func TestHandleNilRequest(t *testing.T) {
	resp := handle(namesrv.NewRegistry(), nil, t0)
	if resp == nil || resp.Code != remoting.SystemError || !resp.IsResponse() {
		t.Fatalf("resp %+v", resp)
	}
}

// TestHandleFailedRegisterLeavesTable checks a refused registration changes
// nothing.
func TestHandleFailedRegisterLeavesTable(t *testing.T) {
	r := namesrv.NewRegistry()
	twoBrokers(t, r)
	before := r.Brokers()
	resp := handle(r, registerCmd(map[string]string{"brokerName": "broker-b", "brokerAddr": "10.0.0.3:10911"},
		[]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"B":{"readQueueNums":-5}}}}`)), t0.Add(1))
	if resp.Code != remoting.InvalidParameter {
		t.Fatalf("code %d", resp.Code)
	}
	after := r.Brokers()
	if len(after) != len(before) || after[2].LastUpdate != before[2].LastUpdate || !hasRoute(r, "B") {
		t.Errorf("table changed: %+v", after)
	}
}
