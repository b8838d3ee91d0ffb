package router

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// javaFrame is a frame as RocketMQ's Java RemotingCommand writes it with
// JSON headers: fastjson, keys sorted, every extFields value a string.
func javaFrame(header string, body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)+len(body)))
	out = binary.BigEndian.AppendUint32(out, uint32(len(header)))
	return append(append(out, header...), body...)
}

// popGolden is one golden frame of the POP family: testdata/pop/<name>.hex.
type popGolden struct {
	name, about string
	frame       []byte
	code        int32
	fields      map[string]string
	check       func(t *testing.T, cmd *remoting.Command)
}

// batchAckJava is a BatchAckMessageRequestBody as fastjson writes it: the
// BatchAck's short @JSONField names, bitSet base64 (offsets 100, 102, 109).
const batchAckJava = `{"acks":[{"b":"BQI=","c":"cg1","it":60000,"pt":1764590000000,"q":2,"r":"0","rq":0,` +
	`"so":100,"t":"orders"}],"brokerName":"broker-a"}`

var popGoldens = []popGolden{
	{name: "pop_message_request", about: "POP_MESSAGE 200050, PopMessageRequestHeader (Java 5.3 client layout)",
		frame: javaFrame(`{"code":200050,"extFields":{"attemptId":"a1","bornTime":"1764590000000","consumerGroup":"cg1",`+
			`"exp":"TagA || TagB","expType":"TAG","initMode":"1","invisibleTime":"60000","maxMsgNums":"32","order":"false",`+
			`"pollTime":"15000","queueId":"-1","topic":"orders"},"flag":0,"language":"JAVA","opaque":41,`+
			`"serializeTypeCurrentRPC":"JSON","version":479}`, nil),
		code: 200050,
		check: func(t *testing.T, cmd *remoting.Command) {
			h, ref := parsePopHeader(cmd)
			want := popHeader{Group: "cg1", Topic: "orders", QueueID: -1, MaxNums: 32, InvisibleMs: 60000,
				Poll: 15 * time.Second, InitMode: 1, ExpType: "TAG", Exp: "TagA || TagB"}
			if ref != nil || h != want {
				t.Fatalf("parsePopHeader: %+v, %v; want %+v", h, ref, want)
			}
		}},
	{name: "pop_message_response", about: "POP_MESSAGE answer, PopMessageResponseHeader (Java 5.3 broker layout), body the records",
		frame: javaFrame(`{"code":0,"extFields":{"invisibleTime":"60000","msgOffsetInfo":"0 2 100,101","popTime":"1764590000000",`+
			`"restNum":"3","reviveQid":"0","startOffsetInfo":"0 2 100"},"flag":1,"language":"JAVA","opaque":41,`+
			`"remark":"FOUND","serializeTypeCurrentRPC":"JSON","version":479}`, nil),
		code: 0, fields: map[string]string{"popTime": "1764590000000", "invisibleTime": "60000", "reviveQid": "0",
			"restNum": "3", "startOffsetInfo": "0 2 100", "msgOffsetInfo": "0 2 100,101"},
	},
	{name: "ack_message_request", about: "ACK_MESSAGE 200051, AckMessageRequestHeader (Java 5.3 client layout)",
		frame: javaFrame(`{"code":200051,"extFields":{"consumerGroup":"cg1","extraInfo":"100 1764590000000 60000 0 0 broker-a 2 100",`+
			`"offset":"100","queueId":"2","topic":"orders"},"flag":0,"language":"JAVA","opaque":42,`+
			`"serializeTypeCurrentRPC":"JSON","version":479}`, nil),
		code: 200051,
		check: func(t *testing.T, cmd *remoting.Command) {
			h, ref := parseAckHeader(cmd, false)
			want := ackHeader{Group: "cg1", Topic: "orders", ExtraInfo: "100 1764590000000 60000 0 0 broker-a 2 100", QueueID: 2, Offset: 100}
			if ref != nil || h != want {
				t.Fatalf("parseAckHeader: %+v, %v; want %+v", h, ref, want)
			}
		}},
	{name: "ack_message_response", about: "ACK_MESSAGE answer: no header fields",
		frame: javaFrame(`{"code":0,"flag":1,"language":"JAVA","opaque":42,"serializeTypeCurrentRPC":"JSON","version":479}`, nil),
		code:  0, fields: map[string]string{}},
	{name: "change_invisible_request", about: "CHANGE_MESSAGE_INVISIBLETIME 200053, ChangeInvisibleTimeRequestHeader (Java 5.3 client layout)",
		frame: javaFrame(`{"code":200053,"extFields":{"consumerGroup":"cg1","extraInfo":"101 1764590000000 60000 0 0 broker-a 2 101",`+
			`"invisibleTime":"5000","offset":"101","queueId":"2","topic":"orders"},"flag":0,"language":"JAVA","opaque":43,`+
			`"serializeTypeCurrentRPC":"JSON","version":479}`, nil),
		code: 200053,
		check: func(t *testing.T, cmd *remoting.Command) {
			h, ref := parseAckHeader(cmd, true)
			want := ackHeader{Group: "cg1", Topic: "orders", ExtraInfo: "101 1764590000000 60000 0 0 broker-a 2 101", QueueID: 2,
				Offset: 101, InvisibleMs: 5000}
			if ref != nil || h != want {
				t.Fatalf("parseAckHeader(change): %+v, %v; want %+v", h, ref, want)
			}
		}},
	{name: "change_invisible_response", about: "CHANGE_MESSAGE_INVISIBLETIME answer, ChangeInvisibleTimeResponseHeader (Java 5.3 broker layout)",
		frame: javaFrame(`{"code":0,"extFields":{"invisibleTime":"5000","popTime":"1764590010000","reviveQid":"0"},"flag":1,`+
			`"language":"JAVA","opaque":43,"serializeTypeCurrentRPC":"JSON","version":479}`, nil),
		code: 0, fields: map[string]string{"popTime": "1764590010000", "invisibleTime": "5000", "reviveQid": "0"}},
	{name: "batch_ack_request", about: "BATCH_ACK_MESSAGE 200151: no header, body BatchAckMessageRequestBody as fastjson writes it (short names)",
		frame: javaFrame(`{"code":200151,"flag":0,"language":"JAVA","opaque":44,"serializeTypeCurrentRPC":"JSON","version":479}`,
			[]byte(batchAckJava)),
		code: 200151,
		check: func(t *testing.T, cmd *remoting.Command) {
			b, items, ref := parseBatchAck(cmd.Body)
			if ref != nil || b.BrokerName != "broker-a" || len(items) != 1 {
				t.Fatalf("parseBatchAck: %+v %+v %v", b, items, ref)
			}
			it := items[0]
			if it.Group != "cg1" || it.Topic != "orders" || it.Handle.QueueID != 2 || it.Handle.PopTime != 1764590000000 ||
				it.Handle.InvisibleTime != 60000 || !slices.Equal(it.Offsets, []int64{100, 102, 109}) {
				t.Fatalf("batch ack item %+v, want cg1/orders q2 offsets [100 102 109]", it)
			}
		}},
	{name: "batch_ack_response", about: "BATCH_ACK_MESSAGE answer: no header fields",
		frame: javaFrame(`{"code":0,"flag":1,"language":"JAVA","opaque":44,"serializeTypeCurrentRPC":"JSON","version":479}`, nil),
		code:  0, fields: map[string]string{}},
}

// TestPopGoldenFrames decodes the POP family's golden frames
// (testdata/pop; -rewrite writes them) and checks their fields and what
// the router's parsers read from them.
func TestPopGoldenFrames(t *testing.T) {
	for _, g := range popGoldens {
		t.Run(g.name, func(t *testing.T) {
			path := filepath.Join("testdata", "pop", g.name+".hex")
			if *rewrite {
				text := "# " + g.about + "\n# regenerate with: go test ./netloop/router -run TestPopGoldenFrames -rewrite\n" +
					hex.Dump(g.frame)
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run with -rewrite to create): %v", err)
			}
			frame := parseDump(t, string(text))
			if !bytes.Equal(frame, g.frame) {
				t.Fatalf("%s holds\n%x\nwant\n%x", path, frame, g.frame)
			}
			cmd, err := remoting.DecodeFrame(frame[4:])
			if err != nil {
				t.Fatalf("DecodeFrame: %v", err)
			}
			if cmd.Code != g.code || cmd.Language != "JAVA" {
				t.Fatalf("code %d language %s, want %d JAVA", cmd.Code, cmd.Language, g.code)
			}
			for k, v := range g.fields {
				if got := cmd.Field(k); got != v {
					t.Errorf("field %s = %q, want %q", k, got, v)
				}
			}
			if g.fields != nil && len(cmd.ExtFields) != len(g.fields) {
				t.Errorf("ext fields %v, want exactly %v", cmd.ExtFields, g.fields)
			}
			if g.check != nil {
				g.check(t, cmd)
			}
		})
	}
}

// parseDump reads hex.Dump output, '#' lines being comments.
func parseDump(t *testing.T, text string) []byte {
	t.Helper()
	var out []byte
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") || len(line) < 10 {
			continue
		}
		hexPart := line[10:min(len(line), 58)]
		b, err := hex.DecodeString(strings.ReplaceAll(hexPart, " ", ""))
		if err != nil {
			t.Fatalf("golden line %q: %v", line, err)
		}
		out = append(out, b...)
	}
	return out
}

// FuzzPopHeaders runs the POP family's parsers on arbitrary fields and
// bodies: no panic, and a header without refusal has its required fields.
func FuzzPopHeaders(f *testing.F) {
	f.Add("cg1", "orders", "-1", "32", "60000", "15000", "1", "100", "100 1 2 0 0 b 2 100", []byte(batchAckJava))
	f.Add("", "", "x", "99999999999999999999", "-1", "", "", "", "", []byte(`{"acks":[{"b":"////","so":9223372036854775807}]}`))
	f.Fuzz(func(t *testing.T, group, topic, qid, maxNums, invisible, poll, initMode, offset, extra string, body []byte) {
		fields := map[string]string{"consumerGroup": group, "topic": topic, "queueId": qid, "maxMsgNums": maxNums,
			"invisibleTime": invisible, "pollTime": poll, "initMode": initMode, "offset": offset, "extraInfo": extra}
		cmd := remoting.NewRequest(remoting.PopMessage, fields, body)
		if h, ref := parsePopHeader(cmd); ref == nil && (h.Group == "" || h.Topic == "") {
			t.Fatalf("pop header accepted without group or topic: %+v", h)
		}
		for _, change := range []bool{false, true} {
			if h, ref := parseAckHeader(cmd, change); ref == nil && (h.Group == "" || h.Topic == "" || h.ExtraInfo == "") {
				t.Fatalf("ack header accepted without group, topic or extraInfo: %+v", h)
			}
		}
		if len(body) <= 1<<16 {
			if _, items, ref := parseBatchAck(body); ref == nil {
				n := 0
				for _, it := range items {
					n += len(it.Offsets)
				}
				if n > maxBatchAckOffsets {
					t.Fatalf("batch ack accepted %d offsets", n)
				}
			}
		}
	})
}
