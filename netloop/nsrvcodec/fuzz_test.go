package nsrvcodec

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv/namesrvtest"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// encodeFields flattens extFields to "k=v" lines for the fuzzer.
func encodeFields(m map[string]string) string {
	var lines []string
	for k, v := range m {
		lines = append(lines, k+"="+v)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func decodeFields(s string) map[string]string {
	m := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		k, v, _ := strings.Cut(line, "=")
		m[k] = v
	}
	return m
}

// FuzzHandle feeds arbitrary commands to a populated registry: it must never
// panic, always answer a response with the request's opaque, and every
// successful route must stay parseable by the Go client.
func FuzzHandle(f *testing.F) {
	reg, err := NewRegisterRequest(master("broker-z", "10.0.0.9:10911"), topics(topic("T", 4)), namesrv.DataVersion{Counter: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(int32(reg.Code), encodeFields(reg.ExtFields), reg.Body)
	java := readTestdata(f, "register_body_java.json")
	f.Add(int32(remoting.RegisterBroker), encodeFields(registerCmd(nil, java).ExtFields), java)
	compressed := namesrvtest.JavaCompressedBody(f)
	f.Add(int32(remoting.RegisterBroker),
		encodeFields(registerCmd(map[string]string{"compressed": "true"}, compressed).ExtFields), compressed)
	f.Add(int32(remoting.UnregisterBroker), encodeFields(NewUnregisterRequest(master("broker-a", "10.0.0.1:10911")).ExtFields), []byte(nil))
	f.Add(int32(remoting.GetRouteInfoByTopic), "topic=T", []byte(nil))
	f.Add(int32(remoting.GetBrokerClusterInfo), "", []byte(nil))
	f.Add(int32(remoting.GetAllTopicListFromNameserver), "", []byte(nil))
	f.Add(int32(remoting.DeleteTopicInNamesrv), "topic=A\nclusterName=DefaultCluster", []byte(nil))
	f.Add(int32(12345), "", []byte("x"))
	f.Add(int32(remoting.PutKVConfig), "namespace=ORDER_TOPIC_CONFIG\nkey=T\nvalue=broker-a:2;broker-b:1", []byte(nil))
	f.Add(int32(remoting.PutKVConfig), "namespace=ns\nkey=k\nvalue=", []byte(nil))
	f.Add(int32(remoting.GetKVConfig), "namespace=ORDER_TOPIC_CONFIG\nkey=A", []byte(nil))
	f.Add(int32(remoting.DeleteKVConfig), "namespace=ORDER_TOPIC_CONFIG\nkey=A", []byte(nil))
	f.Add(int32(remoting.GetKVListByNamespace), "namespace=ORDER_TOPIC_CONFIG", []byte(nil))

	f.Fuzz(func(t *testing.T, code int32, fields string, body []byte) {
		r := namesrv.NewRegistry()
		twoBrokers(t, r)
		r.SetOrderMessageEnable(true)
		mustServe(t, r, putReq(namesrv.NamespaceOrderTopicConfig, "A", "broker-a:1"))
		req := &remoting.Command{Code: code, Opaque: 5, ExtFields: decodeFields(fields), Body: body}
		resp := handle(r, req, t0)
		if resp == nil || !resp.IsResponse() || resp.Opaque != 5 {
			t.Fatalf("bad response %+v", resp)
		}
		// Whatever the KV configuration holds, routes stay readable by
		// the Go client, its order-configuration branch included.
		for _, topic := range []string{"T", "A", "B"} {
			rr := handle(r, routeReq(topic), t0)
			if rr.Code != remoting.Success {
				continue
			}
			rd, err := clientDecode(rr.Body)
			if err != nil {
				t.Fatalf("client decode %s: %v", rr.Body, err)
			}
			clientPublishQueuesOrdered(topic, rd)
		}
		if code == remoting.GetKVListByNamespace && resp.Code == remoting.Success && !json.Valid(resp.Body) {
			t.Fatalf("KVTable %s", resp.Body)
		}
		if code == remoting.RegisterBroker && resp.Code == remoting.Success {
			for _, topic := range r.TopicNames() {
				rr := handle(r, routeReq(topic), t0)
				if rr.Code != remoting.Success || !json.Valid(rr.Body) || bytes.ContainsAny(rr.Body, " \t\r\n") {
					t.Fatalf("route %q: %d %s", topic, rr.Code, rr.Body)
				}
				if _, err := clientDecode(rr.Body); err != nil {
					t.Fatalf("client decode %s: %v", rr.Body, err)
				}
			}
		}
	})
}
