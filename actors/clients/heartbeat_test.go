package clients

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// heartbeatGoldens are HEART_BEAT bodies as real clients write them
// (testdata/heartbeat_*.json) and what each must decode to.
var heartbeatGoldens = []struct {
	file string
	// about says where the bytes come from.
	about string
	want  HeartbeatData
}{
	{
		file:  "heartbeat_go.json",
		about: "rocketmq-client-go/v2, verified bytes (rocketmq-facts 2.4): codeSet as strings, subVersion in ns",
		want: HeartbeatData{
			ClientID:        "10.0.0.1@1234",
			ProducerDataSet: []ProducerData{{GroupName: "PG"}},
			ConsumerDataSet: []ConsumerData{{
				GroupName: "CG", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
				ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
				SubscriptionDataSet: []SubscriptionData{
					{Topic: "T1", SubString: "*", TagsSet: []string{}, CodeSet: []string{}, SubVersion: 1700000000000000000,
						ExpressionType: "TAG"},
					{Topic: "T2", SubString: "a||b", TagsSet: []string{"a", "b"}, CodeSet: []string{"97", "98"}, SubVersion: 1,
						ExpressionType: "TAG"},
				},
			}},
		},
	},
	{
		file:  "heartbeat_alions.json",
		about: "ali-ons 3.12.0 (Node.js), captured from a run against wheelmq: codeSet as numbers, no expressionType",
		want: HeartbeatData{
			ClientID:        "192.0.2.2@wheelmq-test-25321",
			ProducerDataSet: []ProducerData{{GroupName: "CLIENT_INNER_PRODUCER"}, {GroupName: "ncg4-producer"}},
			ConsumerDataSet: []ConsumerData{{
				GroupName: "ncg4", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
				ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
				SubscriptionDataSet: []SubscriptionData{
					{Topic: "nt4", SubString: "TagA || TagB", TagsSet: []string{"TagA", "TagB"},
						CodeSet: []string{"2598919", "2598920"}, SubVersion: 1796038090925, ExpressionType: "TAG"},
					{Topic: "%RETRY%ncg4", SubString: "*", TagsSet: []string{}, CodeSet: []string{},
						SubVersion: 1796038090925, ExpressionType: "TAG"},
				},
			}},
		},
	},
	{
		file: "heartbeat_java.json",
		about: "Java client 5.x as fastjson writes HeartbeatData (fields sorted, codeSet a Set<Integer>, " +
			"heartbeatFingerprint and withoutSub of HeartbeatV2); built from those rules, not captured",
		want: HeartbeatData{
			ClientID:        "10.0.0.1@12345#87654321",
			ProducerDataSet: []ProducerData{{GroupName: "CLIENT_INNER_PRODUCER"}},
			ConsumerDataSet: []ConsumerData{{
				GroupName: "CG", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
				ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
				SubscriptionDataSet: []SubscriptionData{
					{Topic: "T", SubString: "TagA || TagB", TagsSet: []string{"TagA", "TagB"},
						CodeSet: []string{"2598919", "2598920"}, SubVersion: 1700000000000, ExpressionType: "TAG"},
					{Topic: "%RETRY%CG", SubString: "*", TagsSet: []string{}, CodeSet: []string{},
						SubVersion: 1700000000001, ExpressionType: "TAG"},
				},
			}},
		},
	},
	{
		file: "heartbeat_cpp.json",
		about: "rocketmq-client-cpp as its HeartbeatData/SubscriptionData toJson write it with jsoncpp (keys sorted, " +
			"subVersion a string, codeSet numbers, empty sets and expressionType absent, trailing newline); " +
			"built from its source, not captured",
		want: HeartbeatData{
			ClientID:        "10.0.0.3@4321",
			ProducerDataSet: []ProducerData{{GroupName: "PG"}},
			ConsumerDataSet: []ConsumerData{{
				GroupName: "CG", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
				ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
				SubscriptionDataSet: []SubscriptionData{
					{Topic: "T", SubString: "TagA || TagB", TagsSet: []string{"TagA", "TagB"},
						CodeSet: []string{"2598919", "2598920"}, SubVersion: 1700000000000, ExpressionType: "TAG"},
					{Topic: "%RETRY%CG", SubString: "*", SubVersion: 1700000000000, ExpressionType: "TAG"},
				},
			}},
		},
	},
}

func TestParseHeartbeatGoldenBodies(t *testing.T) {
	for _, g := range heartbeatGoldens {
		t.Run(g.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", g.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseHeartbeat(body)
			if err != nil {
				t.Fatalf("%s (%s): %v", g.file, g.about, err)
			}
			if !reflect.DeepEqual(got, g.want) {
				t.Fatalf("%s (%s):\n got %+v\nwant %+v", g.file, g.about, got, g.want)
			}
		})
	}
}

func TestParseHeartbeatLenientValues(t *testing.T) {
	tests := []struct {
		name string
		body string
		want HeartbeatData
	}{
		{
			name: "numbers as strings, booleans as strings, enums as ordinals",
			body: `{"clientID":"c","consumerDataSet":[{"groupName":"G","consumeType":1,"messageModel":0,` +
				`"consumeFromWhere":4,"unitMode":"true","subscriptionDataSet":[{"topic":"T","subString":"*",` +
				`"subVersion":"17","classFilterMode":"false","expressionType":"SQL92"}]}]}`,
			want: HeartbeatData{ClientID: "c", ConsumerDataSet: []ConsumerData{{
				GroupName: "G", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "BROADCASTING",
				ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET", UnitMode: true,
				SubscriptionDataSet: []SubscriptionData{{Topic: "T", SubString: "*", SubVersion: 17, ExpressionType: "SQL92"}},
			}}},
		},
		{
			name: "clientID and group as numbers, nulls, unknown fields",
			body: `{"clientID":42,"producerDataSet":[{"groupName":7}],"consumerDataSet":null,"extra":{"x":[1]}}`,
			want: HeartbeatData{ClientID: "42", ProducerDataSet: []ProducerData{{GroupName: "7"}}},
		},
		{
			name: "subVersion with a fraction",
			body: `{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"T","subVersion":1.7e12}]}]}`,
			want: HeartbeatData{ClientID: "c", ConsumerDataSet: []ConsumerData{{GroupName: "G",
				SubscriptionDataSet: []SubscriptionData{{Topic: "T", SubVersion: 1700000000000, ExpressionType: "TAG"}}}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHeartbeat([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseHeartbeat: no panic; an accepted body has a clientID, and its
// decoded form, written back as JSON in the Go client's shape, decodes to
// the same value.
func FuzzParseHeartbeat(f *testing.F) {
	for _, g := range heartbeatGoldens {
		body, err := os.ReadFile(filepath.Join("testdata", g.file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
		f.Add(body[:len(body)/2])
	}
	f.Add([]byte(`{"clientID":1,"consumerDataSet":[{"messageModel":1,"subscriptionDataSet":[{"codeSet":["1",2,true]}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		hb, err := ParseHeartbeat(body)
		if err != nil {
			return
		}
		if hb.ClientID == "" {
			t.Fatal("accepted a heartbeat without clientID")
		}
		again, err := json.Marshal(hb)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseHeartbeat(again)
		if err != nil {
			t.Fatalf("re-encoded body %s: %v", again, err)
		}
		if !reflect.DeepEqual(normalize(back), normalize(hb)) {
			t.Fatalf("round trip:\n%+v\n%+v\nvia %s", hb, back, bytes.TrimSpace(again))
		}
	})
}

// normalize maps empty slices to nil: JSON keeps [] and absent apart but
// they mean the same subscription.
func normalize(hb HeartbeatData) HeartbeatData {
	if len(hb.ProducerDataSet) == 0 {
		hb.ProducerDataSet = nil
	}
	if len(hb.ConsumerDataSet) == 0 {
		hb.ConsumerDataSet = nil
	}
	for i := range hb.ConsumerDataSet {
		cd := &hb.ConsumerDataSet[i]
		if len(cd.SubscriptionDataSet) == 0 {
			cd.SubscriptionDataSet = nil
		}
		for j := range cd.SubscriptionDataSet {
			sd := &cd.SubscriptionDataSet[j]
			if len(sd.TagsSet) == 0 {
				sd.TagsSet = nil
			}
			if len(sd.CodeSet) == 0 {
				sd.CodeSet = nil
			}
		}
	}
	return hb
}
