package adminbody

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/")

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -rewrite to create it)", err)
	}
	if string(got)+"\n" != string(want) {
		t.Fatalf("%s differs (go test -rewrite to update)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func mq(topic string, id int32) MessageQueue {
	return MessageQueue{BrokerName: "broker-a", QueueID: id, Topic: topic}
}

// TestConsumeStatsMatchesFastjson compares with the bytes fastjson 1.2.83
// wrote for the same ConsumeStats (rocketmq-facts.md 11.13, verified run).
func TestConsumeStatsMatchesFastjson(t *testing.T) {
	c := ConsumeStats{OffsetTable: map[MessageQueue]OffsetWrapper{
		mq("T", 0): {BrokerOffset: 10, ConsumerOffset: 8, LastTimestamp: 1700000000000, PullOffset: 8},
	}}
	got, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	const fastjson = `{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:` +
		`{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":1700000000000,"pullOffset":8}}}`
	if string(got) != fastjson {
		t.Fatalf("got  %s\nwant %s", got, fastjson)
	}
}

func TestGoldenBodies(t *testing.T) {
	tests := []struct {
		name   string
		encode func() ([]byte, error)
	}{
		{"consume_stats.json", ConsumeStats{ConsumeTps: 12.5, OffsetTable: map[MessageQueue]OffsetWrapper{
			mq("T", 1):        {BrokerOffset: 7, ConsumerOffset: 3, LastTimestamp: 1700000000100, PullOffset: 5},
			mq("T", 0):        {BrokerOffset: 10, ConsumerOffset: 10, LastTimestamp: 1700000000000, PullOffset: 10},
			mq("%RETRY%G", 0): {},
		}}.Encode},
		{"consume_stats_empty.json", ConsumeStats{}.Encode},
		{"topic_stats.json", TopicStatsTable{TopicPutTps: 3, OffsetTable: map[MessageQueue]TopicOffset{
			mq("T", 0): {LastUpdateTimestamp: 1700000000000, MaxOffset: 10, MinOffset: 0},
			mq("T", 1): {MaxOffset: 0},
		}}.Encode},
		{"reset_offset.json", ResetOffsetBody{OffsetTable: map[MessageQueue]int64{mq("T", 0): 0, mq("T", 1): 42}}.Encode},
		{"kv_table.json", KVTable{Table: map[string]string{"brokerVersionDesc": "V5_3_3", "putTps": "1.0 0.5 0.1",
			"bootTimestamp": "1700000000000"}}.Encode},
		{"consumer_connection.json", ConsumerConnection{
			ConnectionSet: []Connection{
				{ClientAddr: "10.0.0.2:5001", ClientID: "10.0.0.2@2", Language: "JAVA", Version: 479},
				{ClientAddr: "10.0.0.1:5000", ClientID: "10.0.0.1@1", Language: "GO", Version: 317},
			},
			ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
			SubscriptionTable: map[string]SubscriptionData{
				"T":        {CodeSet: []int32{97, 98}, ExpressionType: "TAG", SubString: "a||b", SubVersion: 1, TagsSet: []string{"a", "b"}, Topic: "T"},
				"%RETRY%G": {ExpressionType: "TAG", SubString: "*", SubVersion: 2, Topic: "%RETRY%G"},
			},
		}.Encode},
		{"producer_connection.json", ProducerConnection{ConnectionSet: []Connection{
			{ClientAddr: "10.0.0.1:5000", ClientID: "10.0.0.1@1", Language: "GO", Version: 317},
		}}.Encode},
		{"producer_connection_empty.json", ProducerConnection{}.Encode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.encode()
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.name, got)
		})
	}
}

func TestRoundTrips(t *testing.T) {
	cs := ConsumeStats{ConsumeTps: 0.25, OffsetTable: map[MessageQueue]OffsetWrapper{
		mq("T", 0): {BrokerOffset: 10, ConsumerOffset: 8, LastTimestamp: 1, PullOffset: 9},
		{BrokerName: `b"x`, QueueID: 3, Topic: "U"}: {BrokerOffset: 1},
	}}
	b, err := cs.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecodeConsumeStats(b); err != nil || !reflect.DeepEqual(back, cs) {
		t.Fatalf("consume stats: %+v %v", back, err)
	}
	if cs.Lag() != 3 {
		t.Errorf("lag %d, want 3", cs.Lag())
	}
	ts := TopicStatsTable{TopicPutTps: 1e-4, OffsetTable: map[MessageQueue]TopicOffset{mq("T", 0): {1, 2, 3}}}
	b, err = ts.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecodeTopicStatsTable(b); err != nil || !reflect.DeepEqual(back, ts) {
		t.Fatalf("topic stats: %+v %v", back, err)
	}
	ro := ResetOffsetBody{OffsetTable: map[MessageQueue]int64{mq("T", 0): 5}}
	b, err = ro.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecodeResetOffsetBody(b); err != nil || !reflect.DeepEqual(back, ro) {
		t.Fatalf("reset offset: %+v %v", back, err)
	}
	cc := ConsumerConnection{ConnectionSet: []Connection{{"a:1", "a@1", "GO", 317}}, SubscriptionTable: map[string]SubscriptionData{
		"T": {CodeSet: []int32{1}, TagsSet: []string{"x"}, Topic: "T"}}}
	b, err = cc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecodeConsumerConnection(b); err != nil || !reflect.DeepEqual(back, cc) {
		t.Fatalf("consumer connection: %+v %v", back, err)
	}
	kv := KVTable{Table: map[string]string{"a": "1"}}
	b, err = kv.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecodeKVTable(b); err != nil || !reflect.DeepEqual(back, kv) {
		t.Fatalf("kv table: %+v %v", back, err)
	}
}

// TestDecodeQueueMapForms reads every key form fastjson accepts.
func TestDecodeQueueMapForms(t *testing.T) {
	want := map[MessageQueue]int64{mq("T", 0): 3, mq("T", 1): 4}
	for _, in := range []string{
		`{{"brokerName":"broker-a","queueId":0,"topic":"T"}:3,{"brokerName":"broker-a","queueId":1,"topic":"T"}:4}`,
		"{ {\"topic\":\"T\", \"queueId\":0, \"brokerName\":\"broker-a\"} : 3 ,\n {\"brokerName\":\"broker-a\",\"queueId\":1,\"topic\":\"T\"}:4 }",
		`{"{\"brokerName\":\"broker-a\",\"queueId\":0,\"topic\":\"T\"}":3,"{\"brokerName\":\"broker-a\",\"queueId\":1,\"topic\":\"T\"}":4}`,
	} {
		got, err := DecodeQueueMap[int64]([]byte(in))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{``, `{`, `{{"topic":"T"}}`, `{{"topic":"T"}:}`, `{{"topic":1}:3}`, `{"x":3}`,
		`{{"topic":"T"}:"x"}`, `{{"topic":"T"}:3}x`, `[1]`, strings.Repeat("[", 100) + strings.Repeat("]", 100)} {
		if _, err := DecodeQueueMap[int64]([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// goFastJSONParse is rocketmq-client-go's parseFastJsonFormat
// (internal/model.go), the only parser of object keys in the Go client,
// reproduced to check that our ResetOffsetBody is in the exact form it
// needs: drop the first two and the last character of the offsetTable text,
// split on ",{", then on "}:", re-add braces, unmarshal the queue, Atoi the
// offset.
func goFastJSONParse(t *testing.T, body []byte) map[MessageQueue]int64 {
	t.Helper()
	s := string(body)
	start := strings.Index(s, `"offsetTable":`) + len(`"offsetTable":`)
	table := s[start : len(s)-1]
	out := map[MessageQueue]int64{}
	for _, v := range strings.Split(table[2:len(table)-1], ",{") {
		tuple := strings.Split(v, "}:")
		var q MessageQueue
		if err := jsonUnmarshal("{"+tuple[0]+"}", &q); err != nil {
			t.Fatalf("Go client parser: queue %q: %v", tuple[0], err)
		}
		n, err := strconv.Atoi(tuple[1])
		if err != nil {
			t.Fatalf("Go client parser: offset %q: %v", tuple[1], err)
		}
		out[q] = int64(n)
	}
	return out
}

func TestResetOffsetBodyReadableByGoClient(t *testing.T) {
	want := map[MessageQueue]int64{mq("T", 0): 0, mq("T", 1): 42, mq("T", 2): 7}
	b, err := ResetOffsetBody{OffsetTable: want}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got := goFastJSONParse(t, b); !reflect.DeepEqual(got, want) {
		t.Fatalf("Go client reads %v, want %v", got, want)
	}
}

func TestDouble(t *testing.T) {
	for _, tt := range []struct {
		in   float64
		want string
	}{{0, "0.0"}, {12, "12.0"}, {12.5, "12.5"}, {-3, "-3.0"}, {0.0001, "0.0001"}, {1e21, "1000000000000000000000.0"}} {
		b, _ := Double(tt.in).MarshalJSON()
		if string(b) != tt.want {
			t.Errorf("%v -> %s, want %s", tt.in, b, tt.want)
		}
	}
	var d Double
	for in, want := range map[string]float64{`1`: 1, `"2.5"`: 2.5, `0.0`: 0} {
		if err := d.UnmarshalJSON([]byte(in)); err != nil || float64(d) != want {
			t.Errorf("%s -> %v %v", in, d, err)
		}
	}
	if err := d.UnmarshalJSON([]byte(`"x"`)); err == nil {
		t.Error(`"x" accepted as a double`)
	}
}
