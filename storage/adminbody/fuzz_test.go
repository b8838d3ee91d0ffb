package adminbody

import (
	"encoding/json"
	"reflect"
	"testing"
)

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// FuzzDecodeConsumeStats checks that the decoder never panics and that what
// it accepts encodes to a body that decodes to the same value.
func FuzzDecodeConsumeStats(f *testing.F) {
	for _, s := range []string{
		`{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":1,"pullOffset":8}}}`,
		`{"consumeTps":"1.5","offsetTable":{"{\"brokerName\":\"b\",\"queueId\":1,\"topic\":\"T\"}":{}}}`,
		`{"offsetTable":{}}`, `{}`, `{"offsetTable":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeConsumeStats(b)
		if err != nil {
			return
		}
		enc, err := c.Encode()
		if err != nil {
			return // e.g. a huge double that JSON cannot carry is rejected, not mangled
		}
		back, err := DecodeConsumeStats(enc)
		if err != nil {
			t.Fatalf("own encoding %s rejected: %v", enc, err)
		}
		if len(back.OffsetTable) != len(c.OffsetTable) {
			t.Fatalf("round trip lost entries: %d != %d", len(back.OffsetTable), len(c.OffsetTable))
		}
		for k, v := range c.OffsetTable {
			if back.OffsetTable[k] != v {
				t.Fatalf("round trip changed %+v: %+v != %+v", k, back.OffsetTable[k], v)
			}
		}
	})
}

// FuzzDecodeQueueMap checks the scanner on arbitrary text.
func FuzzDecodeQueueMap(f *testing.F) {
	for _, s := range []string{`{{"brokerName":"b","queueId":0,"topic":"T"}:3}`, `{"{\"topic\":\"T\"}":1}`, `{}`,
		`{{"a":[1,{"b":"}"}]}:1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeQueueMap[int64](b)
		if err != nil {
			return
		}
		enc, err := ResetOffsetBody{OffsetTable: m}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeResetOffsetBody(enc)
		if err != nil {
			t.Fatalf("own encoding %s rejected: %v", enc, err)
		}
		if len(m) == 0 && len(back.OffsetTable) == 0 {
			return
		}
		if !reflect.DeepEqual(back.OffsetTable, m) {
			t.Fatalf("round trip %v != %v", back.OffsetTable, m)
		}
	})
}

func FuzzDecodeConsumeStatsList(f *testing.F) {
	l := ConsumeStatsList{BrokerAddr: "127.0.0.1:10911", TotalDiff: 3, ConsumeStatsList: []GroupConsumeStats{{Group: "G",
		Stats: []ConsumeStats{{OffsetTable: map[MessageQueue]OffsetWrapper{{BrokerName: "b", QueueID: 0, Topic: "T"}: {BrokerOffset: 3}}}}}}}
	enc, err := l.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(enc)
	f.Add([]byte(`{"consumeStatsList":[],"totalDiff":0}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := DecodeConsumeStatsList(body)
		if err != nil {
			return
		}
		again, err := got.Encode()
		if err != nil {
			return // a value Encode refuses (e.g. a NaN tps cannot come from JSON)
		}
		back, err := DecodeConsumeStatsList(again)
		if err != nil || back.TotalDiff != got.TotalDiff || len(back.ConsumeStatsList) != len(got.ConsumeStatsList) {
			t.Fatalf("round trip: %v %+v vs %+v", err, back, got)
		}
	})
}
