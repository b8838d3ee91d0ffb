package namesrv

import (
	"errors"
	"reflect"
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv/namesrvtest"
)

// FuzzDecodeRegisterBody checks the body decoder never panics and reports
// only ErrBadBody.
func FuzzDecodeRegisterBody(f *testing.F) {
	f.Add(readTestdata(f, "register_body_java.json"), false)
	f.Add(readTestdata(f, "register_body.json"), false)
	f.Add(namesrvtest.JavaCompressedBody(f), true)
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
	f.Add(namesrvtest.InflatedLayout(dvJSON, []string{"TBW102 8 8 7 SINGLE_TAG {}", "orders 4 4 6 MULTI_TAG"}, `[]`, []string{`{}`}))
	f.Add(namesrvtest.InflatedLayout(dvJSON, []string{`{"topicName":"x","readQueueNums":1}`}, `[]`, nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _, err := decodeCompressedBody(namesrvtest.Deflate(t, raw), 1<<20)
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
