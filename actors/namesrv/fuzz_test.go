package namesrv

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

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
	reg, err := NewRegisterRequest(master("broker-z", "10.0.0.9:10911"), topics(topic("T", 4)), DataVersion{Counter: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(int32(reg.Code), encodeFields(reg.ExtFields), reg.Body)
	java := readTestdata(f, "register_body_java.json")
	f.Add(int32(remoting.RegisterBroker), encodeFields(registerCmd(nil, java).ExtFields), java)
	compressed := javaCompressedBody(f)
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
		r := NewRegistry()
		twoBrokers(t, r)
		r.SetOrderMessageEnable(true)
		mustServe(t, r, putReq(NamespaceOrderTopicConfig, "A", "broker-a:1"))
		req := &remoting.Command{Code: code, Opaque: 5, ExtFields: decodeFields(fields), Body: body}
		resp := r.Handle(req, t0)
		if resp == nil || !resp.IsResponse() || resp.Opaque != 5 {
			t.Fatalf("bad response %+v", resp)
		}
		// Whatever the KV configuration holds, routes stay readable by
		// the Go client, its order-configuration branch included.
		for _, topic := range []string{"T", "A", "B"} {
			rr := r.Handle(routeReq(topic), t0)
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
				rr := r.Handle(routeReq(topic), t0)
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

// FuzzDecodeRegisterBody checks the body decoder never panics and reports
// only ErrBadBody.
func FuzzDecodeRegisterBody(f *testing.F) {
	f.Add(readTestdata(f, "register_body_java.json"), false)
	f.Add(readTestdata(f, "register_body.json"), false)
	f.Add(javaCompressedBody(f), true)
	f.Add(readTestdata(f, "register_body_java4.json"), false)
	f.Add(readTestdata(f, "register_body_lenient.json"), false)
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":null}}}`), false)
	f.Fuzz(func(t *testing.T, body []byte, compressed bool) {
		tcs, dv, err := decodeRegisterBody(body, compressed)
		if err != nil && !errors.Is(err, ErrBadBody) {
			t.Fatalf("unexpected error class: %v", err)
		}
		if err == nil && tcs == nil {
			t.Fatal("nil table without error")
		}
		if err != nil {
			return
		}
		// What was accepted, written as wheelmq writes it, reads back the same.
		enc, err := marshalCompact(registerBrokerBody{TopicConfigSerializeWrapper: topicConfigWrapper{
			TopicConfigTable: tcs, DataVersion: dv}})
		if err != nil {
			t.Fatal(err)
		}
		again, dv2, err := decodeRegisterBody(enc, false)
		if err != nil || !reflect.DeepEqual(again, tcs) || dv2 != dv {
			t.Fatalf("round trip of %s: %+v %+v vs %+v %+v (%v)", enc, tcs, dv, again, dv2, err)
		}
	})
}

// FuzzDecodeInflated fuzzes the section parser behind the zlib layer.
func FuzzDecodeInflated(f *testing.F) {
	f.Add(inflatedLayout(dvJSON, []string{"TBW102 8 8 7 SINGLE_TAG {}", "orders 4 4 6 MULTI_TAG"}, `[]`, []string{`{}`}))
	f.Add(inflatedLayout(dvJSON, []string{`{"topicName":"x","readQueueNums":1}`}, `[]`, nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _, err := decodeCompressedBody(deflate(t, raw), 1<<20)
		if err != nil && !errors.Is(err, ErrBadBody) {
			t.Fatalf("unexpected error class: %v", err)
		}
	})
}

// FuzzParseRouteData checks ParseRouteData never panics and that what it
// accepts survives an encode/decode round trip.
func FuzzParseRouteData(f *testing.F) {
	f.Add(readTestdata(f, "route_two_brokers.json"))
	f.Add([]byte(`{"brokerDatas":[{"brokerAddrs":{0:"a:1"}}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rd, err := ParseRouteData(body)
		if err != nil {
			if !errors.Is(err, ErrBadBody) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		enc, err := marshalCompact(rd)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseRouteData(enc)
		if err != nil || !reflect.DeepEqual(rd, again) {
			t.Fatalf("round trip %s: %+v vs %+v (%v)", enc, rd, again, err)
		}
	})
}

// FuzzParseKVConfig checks the kvConfig.json decoder never panics, reports
// only ErrBadBody, and that what it accepts is written and read back the
// same.
func FuzzParseKVConfig(f *testing.F) {
	f.Add(readTestdata(f, "kvConfig.json"))
	f.Add(readTestdata(f, "kvConfig_java.json"))
	f.Add([]byte(`{"configTable":{"a":null,"b":{"k":null,"v":1.5,"o":{"x":[1]}}}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseKVConfig(data)
		if err != nil {
			if !errors.Is(err, ErrBadBody) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		enc, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseKVConfig(enc)
		if err != nil || !sameKV(c, again) {
			t.Fatalf("round trip %s: %v vs %v (%v)", enc, c.table, again, err)
		}
	})
}
