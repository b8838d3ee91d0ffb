package nsrvcodec

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// kvReq builds a KV request; a field whose value is "<absent>" is left out.
func kvReq(code int32, fields ...string) *remoting.Command {
	ext := map[string]string{}
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] != "<absent>" {
			ext[fields[i]] = fields[i+1]
		}
	}
	return &remoting.Command{Code: code, Language: "JAVA", Version: remoting.BrokerVersion, Opaque: 3, ExtFields: ext}
}

func putReq(ns, key, value string) *remoting.Command {
	return kvReq(remoting.PutKVConfig, "namespace", ns, "key", key, "value", value)
}

func getReq(ns, key string) *remoting.Command {
	return kvReq(remoting.GetKVConfig, "namespace", ns, "key", key)
}

func deleteReq(ns, key string) *remoting.Command {
	return kvReq(remoting.DeleteKVConfig, "namespace", ns, "key", key)
}

func listReq(ns string) *remoting.Command {
	return kvReq(remoting.GetKVListByNamespace, "namespace", ns)
}

// mustServe fails the test unless req succeeds.
func mustServe(t *testing.T, r *namesrv.Registry, req *remoting.Command) *remoting.Command {
	t.Helper()
	resp := handle(r, req, t0)
	if resp.Code != remoting.Success {
		t.Fatalf("code %d request: code %d remark %q", req.Code, resp.Code, resp.Remark)
	}
	return resp
}

func TestKVHandle(t *testing.T) {
	const order = namesrv.NamespaceOrderTopicConfig
	seed := func(t *testing.T, r *namesrv.Registry) {
		mustServe(t, r, putReq("ns", "a", "1"))
		mustServe(t, r, putReq("ns", "b", "2"))
		mustServe(t, r, putReq(order, "T", "broker-a:4"))
	}
	tests := []struct {
		name   string
		req    *remoting.Command
		code   int32
		remark string // the exact remark ("" for a success)
		field  string // GET_KV_CONFIG: the response header value
		body   string // the exact body ("" for none)
		after  map[[2]string]string
	}{
		{name: "get", req: getReq("ns", "a"), field: "1"},
		{name: "get absent key", req: getReq("ns", "zz"), code: remoting.QueryNotFound,
			remark: "No config item, Namespace: ns Key: zz"},
		{name: "get absent namespace", req: getReq("nope", "a"), code: remoting.QueryNotFound,
			remark: "No config item, Namespace: nope Key: a"},
		{name: "get without key", req: kvReq(remoting.GetKVConfig, "namespace", "ns"), code: remoting.SystemError,
			remark: "namesrv: missing header field: the custom field <key> is null"},
		{name: "list", req: listReq("ns"), body: `{"table":{"a":"1","b":"2"}}`},
		{name: "list absent namespace", req: listReq("nope"), code: remoting.QueryNotFound,
			remark: "No config item, Namespace: nope"},
		{name: "list without namespace", req: kvReq(remoting.GetKVListByNamespace), code: remoting.SystemError,
			remark: "namesrv: missing header field: the custom field <namespace> is null"},
		{name: "put new", req: putReq("ns", "c", "<3>&"), after: map[[2]string]string{{"ns", "c"}: "<3>&", {"ns", "a"}: "1"}},
		{name: "put replaces", req: putReq("ns", "a", "one"), after: map[[2]string]string{{"ns", "a"}: "one"}},
		{name: "put new namespace", req: putReq("other", "k", "v"), after: map[[2]string]string{{"other", "k"}: "v"}},
		{name: "put empty value, namespace and key (Java refuses null only)", req: putReq("", "", ""),
			after: map[[2]string]string{{"", ""}: ""}},
		{name: "put without namespace", req: kvReq(remoting.PutKVConfig, "key", "k", "value", "v"), code: remoting.SystemError,
			remark: "namesrv: missing header field: the custom field <namespace> is null"},
		{name: "put without key", req: putReq("ns", "<absent>", "v"), code: remoting.SystemError,
			remark: "namesrv: missing header field: the custom field <key> is null"},
		{name: "put without value", req: putReq("ns", "a", "<absent>"), code: remoting.SystemError,
			remark: "namesrv: missing header field: the custom field <value> is null", after: map[[2]string]string{{"ns", "a"}: "1"}},
		{name: "put order conf", req: putReq(order, "U", "broker-a:4;broker-b:02;broker-c:+1"),
			after: map[[2]string]string{{order, "U"}: "broker-a:4;broker-b:02;broker-c:+1"}},
		{name: "put empty order conf", req: putReq(order, "T", ""), after: map[[2]string]string{{order, "T"}: ""}},
		{name: "put order conf without count", req: putReq(order, "T", "broker-a"), code: remoting.InvalidParameter,
			remark: `namesrv: invalid value: ORDER_TOPIC_CONFIG value "broker-a": item 0 "broker-a" is not brokerName:queueNums`,
			after:  map[[2]string]string{{order, "T"}: "broker-a:4"}},
		{name: "put order conf trailing separator", req: putReq(order, "T", "broker-a:4;"), code: remoting.InvalidParameter,
			remark: `namesrv: invalid value: ORDER_TOPIC_CONFIG value "broker-a:4;": item 1 "" is not brokerName:queueNums`},
		{name: "put order conf empty broker", req: putReq(order, "T", ":4"), code: remoting.InvalidParameter,
			remark: `namesrv: invalid value: ORDER_TOPIC_CONFIG value ":4": item 0 ":4" is not brokerName:queueNums`},
		{name: "put order conf zero queues", req: putReq(order, "T", "broker-a:0"), code: remoting.InvalidParameter,
			remark: `namesrv: invalid value: ORDER_TOPIC_CONFIG value "broker-a:0": item 0 "broker-a:0": queue count must be a number in 1..65535`},
		{name: "put order conf huge count", req: putReq(order, "T", "broker-a:65536"), code: remoting.InvalidParameter,
			remark: `namesrv: invalid value: ORDER_TOPIC_CONFIG value "broker-a:65536": item 0 "broker-a:65536": queue count must be a number in 1..65535`},
		{name: "put order conf two colons", req: putReq(order, "T", "broker-a:4:5"), code: remoting.InvalidParameter,
			remark: `namesrv: invalid value: ORDER_TOPIC_CONFIG value "broker-a:4:5": item 0 "broker-a:4:5": queue count must be a number in 1..65535`},
		{name: "other namespaces take any value", req: putReq("ns", "a", "broker-a;"), after: map[[2]string]string{{"ns", "a"}: "broker-a;"}},
		{name: "delete", req: deleteReq("ns", "a"), after: map[[2]string]string{{"ns", "a"}: "<absent>", {"ns", "b"}: "2"}},
		{name: "delete absent key", req: deleteReq("ns", "zz"), after: map[[2]string]string{{"ns", "a"}: "1"}},
		{name: "delete absent namespace", req: deleteReq("nope", "a")},
		{name: "delete without namespace", req: kvReq(remoting.DeleteKVConfig, "key", "a"), code: remoting.SystemError,
			remark: "namesrv: missing header field: the custom field <namespace> is null", after: map[[2]string]string{{"ns", "a"}: "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := namesrv.NewRegistry()
			seed(t, r)
			tc.req.Opaque = 77
			resp := handle(r, tc.req, t0)
			if resp.Code != tc.code || resp.Remark != tc.remark {
				t.Fatalf("code %d remark %q, want %d %q", resp.Code, resp.Remark, tc.code, tc.remark)
			}
			if resp.Opaque != 77 || !resp.IsResponse() {
				t.Errorf("opaque %d flag %d", resp.Opaque, resp.Flag)
			}
			if got := resp.Field(fieldValue); got != tc.field {
				t.Errorf("value header %q, want %q", got, tc.field)
			}
			if string(resp.Body) != tc.body {
				t.Errorf("body %s, want %s", resp.Body, tc.body)
			}
			for k, want := range tc.after {
				got, ok := r.KVConfig().Get(k[0], k[1])
				if !ok {
					got = "<absent>"
				}
				if got != want {
					t.Errorf("after: %s/%s = %q, want %q", k[0], k[1], got, want)
				}
			}
		})
	}
}

// TestKVDeleteKeepsNamespace: as Java's KVConfigManager, deleting the last
// key leaves the namespace, listed empty.
func TestKVDeleteKeepsNamespace(t *testing.T) {
	r := namesrv.NewRegistry()
	mustServe(t, r, putReq("ns", "a", "1"))
	mustServe(t, r, deleteReq("ns", "a"))
	if resp := mustServe(t, r, listReq("ns")); string(resp.Body) != `{"table":{}}` {
		t.Fatalf("list %s", resp.Body)
	}
	if resp := handle(r, getReq("ns", "a"), t0); resp.Code != remoting.QueryNotFound {
		t.Fatalf("get after delete: %d", resp.Code)
	}
}

// TestKVPersistence: every change is saved before it is answered, nothing
// else is, and a failed save changes nothing.
func TestKVPersistence(t *testing.T) {
	r := namesrv.NewRegistry()
	var saved []*namesrv.KVConfig
	var fail error
	r.UseKVConfig(nil, func(c *namesrv.KVConfig) error {
		if fail != nil {
			return fail
		}
		saved = append(saved, c)
		return nil
	})
	mustServe(t, r, putReq("ns", "a", "1"))
	mustServe(t, r, putReq("ns", "a", "1"))  // same value: no write
	mustServe(t, r, deleteReq("ns", "zz"))   // absent: no write
	mustServe(t, r, deleteReq("nope", "zz")) // absent namespace: no write
	mustServe(t, r, getReq("ns", "a"))
	mustServe(t, r, listReq("ns"))
	mustServe(t, r, putReq("ns", "b", "2"))
	mustServe(t, r, deleteReq("ns", "a"))
	if len(saved) != 3 {
		t.Fatalf("%d saves, want 3 (put a, put b, delete a)", len(saved))
	}
	if saved[len(saved)-1] != r.KVConfig() {
		t.Fatal("the current configuration is not the one saved last")
	}
	if _, ok := saved[0].Get("ns", "b"); ok {
		t.Fatal("a saved configuration changed afterwards")
	}

	fail = errors.New("disk on fire")
	before := r.KVConfig()
	for _, req := range []*remoting.Command{putReq("ns", "c", "3"), putReq("ns", "b", "two"), deleteReq("ns", "b")} {
		resp := handle(r, req, t0)
		if resp.Code != remoting.SystemError || resp.Remark != "disk on fire" {
			t.Fatalf("code %d with a failing save: %d %q", req.Code, resp.Code, resp.Remark)
		}
	}
	if r.KVConfig() != before {
		t.Fatal("a change whose save failed was made")
	}
	if v, _ := r.KVConfig().Get("ns", "b"); v != "2" {
		t.Fatalf("b = %q", v)
	}
}

// TestKVRegisterResponseBody: REGISTER_BROKER answers the ORDER_TOPIC_CONFIG
// namespace as KVTable (Java's returnOrderTopicConfigToBroker), no body
// without it.
func TestKVRegisterResponseBody(t *testing.T) {
	r := namesrv.NewRegistry()
	if resp := mustRegister(t, r, master("broker-a", "10.0.0.1:10911"), t0, topic("T", 4)); resp.Body != nil {
		t.Fatalf("no order configuration: body %s", resp.Body)
	}
	mustServe(t, r, putReq(namesrv.NamespaceOrderTopicConfig, "T", "broker-a:4"))
	mustServe(t, r, putReq(namesrv.NamespaceOrderTopicConfig, "U", "broker-a:2;broker-b:2"))
	mustServe(t, r, putReq("other", "X", "y"))
	resp := mustRegister(t, r, master("broker-a", "10.0.0.1:10911"), t0, topic("T", 4))
	if want := `{"table":{"T":"broker-a:4","U":"broker-a:2;broker-b:2"}}`; string(resp.Body) != want {
		t.Fatalf("body %s, want %s", resp.Body, want)
	}
	var kv struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(resp.Body, &kv); err != nil || len(kv.Table) != 2 {
		t.Fatalf("KVTable %s: %v", resp.Body, err)
	}
}

// clientPublishQueuesOrdered is the Go client's routeData2PublishInfo with
// its orderTopicConf branch: "name:num" items split on ';' and ':', item[1]
// indexed unchecked (a panic here is a panic in the client's producer).
func clientPublishQueuesOrdered(topic string, rd *clientRoute) []string {
	if rd.OrderTopicConf == "" {
		return clientPublishQueues(topic, rd)
	}
	var out []string
	for _, broker := range strings.Split(rd.OrderTopicConf, ";") {
		item := strings.Split(broker, ":")
		nums, _ := strconv.Atoi(item[1])
		for i := range nums {
			out = append(out, fmt.Sprintf("%s@%s#%d", topic, item[0], i))
		}
	}
	return out
}

// TestKVRouteOrderTopicConf: with order messages enabled a route carries the
// topic's ORDER_TOPIC_CONFIG value as orderTopicConf, compact, and the Go
// client's parser builds its queues from it; without, routes are unchanged.
func TestKVRouteOrderTopicConf(t *testing.T) {
	r := namesrv.NewRegistry()
	twoBrokers(t, r)
	plain := mustServe(t, r, routeReq("T")).Body
	mustServe(t, r, putReq(namesrv.NamespaceOrderTopicConfig, "T", "broker-a:2;broker-b:1"))
	if got := mustServe(t, r, routeReq("T")).Body; string(got) != string(plain) {
		t.Fatalf("orderMessageEnable off: route changed to %s", got)
	}

	r.SetOrderMessageEnable(true)
	body := mustServe(t, r, routeReq("T")).Body
	golden(t, "route_order_topic_conf.json", body)
	if !json.Valid(body) || strings.ContainsAny(string(body), " \t\r\n") {
		t.Fatalf("route not compact JSON: %s", body)
	}
	rd, err := clientDecode(body)
	if err != nil {
		t.Fatal(err)
	}
	if rd.OrderTopicConf != "broker-a:2;broker-b:1" || len(rd.BrokerDataList) != 2 || rd.BrokerDataList[0].BrokerAddresses[0] != "10.0.0.1:10911" {
		t.Fatalf("client view %+v", rd)
	}
	if got, want := clientPublishQueuesOrdered("T", rd), []string{"T@broker-a#0", "T@broker-a#1", "T@broker-b#0"}; !slices.Equal(got, want) {
		t.Fatalf("publish queues %v, want %v", got, want)
	}
	parsed, err := namesrv.ParseRouteData(body)
	if err != nil || parsed.OrderTopicConf != "broker-a:2;broker-b:1" {
		t.Fatalf("ParseRouteData: %+v %v", parsed, err)
	}

	// Other topics and unknown topics are as before.
	if got := mustServe(t, r, routeReq("A")).Body; strings.Contains(string(got), "orderTopicConf") {
		t.Fatalf("route of A: %s", got)
	}
	mustServe(t, r, putReq(namesrv.NamespaceOrderTopicConfig, "nowhere", "broker-a:1"))
	if resp := handle(r, routeReq("nowhere"), t0); resp.Code != remoting.TopicNotExist {
		t.Fatalf("order conf of an unrouted topic: %d", resp.Code)
	}

	// An empty value is no order configuration, as both clients read it.
	mustServe(t, r, putReq(namesrv.NamespaceOrderTopicConfig, "T", ""))
	if got := mustServe(t, r, routeReq("T")).Body; string(got) != string(plain) {
		t.Fatalf("empty order conf: %s", got)
	}

	// A value the clients cannot read (a file edited by hand) is left out.
	kv, err := namesrv.ParseKVConfig([]byte(`{"configTable":{"ORDER_TOPIC_CONFIG":{"T":"broker-a"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r.UseKVConfig(kv, nil)
	if got := mustServe(t, r, routeReq("T")).Body; string(got) != string(plain) {
		t.Fatalf("unreadable order conf reached the route: %s", got)
	}
}
