package netloop_test

import (
	"bytes"
	"encoding/binary"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// answers collects the decoded responses written to a fake connection
// without a socket (every write goes through the fake loop).
type answers chan *remoting.Command

func (a answers) onWrite(b []byte) {
	for len(b) >= 4 {
		size := int(binary.BigEndian.Uint32(b)) + 4
		resp, err := remoting.DecodeFrame(b[4:size])
		if err != nil {
			panic(err)
		}
		a <- resp
		b = b[size:]
	}
}

func (a answers) next(t *testing.T) *remoting.Command {
	t.Helper()
	select {
	case r := <-a:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return nil
	}
}

// viaGeneralPath re-encodes a JSON request with one extFields value that
// is a JSON number: a header shape some clients send, which the general
// path reads (as "1") and the hot path leaves to it.
func viaGeneralPath(t *testing.T, frame []byte) []byte {
	t.Helper()
	h := frame[8 : 8+int(binary.BigEndian.Uint32(frame[4:])&0xffffff)]
	i := bytes.Index(h, []byte(`"extFields":{`))
	if i < 0 {
		t.Fatalf("no extFields in %s", h)
	}
	at := i + len(`"extFields":{`)
	nh := append(append(append([]byte(nil), h[:at]...), `"zz":1,`...), h[at:]...)
	body := frame[8+len(h):]
	out := binary.BigEndian.AppendUint32(nil, uint32(4+len(nh)+len(body)))
	out = binary.BigEndian.AppendUint32(out, uint32(len(nh)))
	return append(append(out, nh...), body...)
}

// TestPlainSendMatchesGeneralPath sends the same messages through the hot
// path and, reshaped, through the general path, and checks the answers and
// the stored records agree on everything but offsets and store time.
func TestPlainSendMatchesGeneralPath(t *testing.T) {
	bb := newBenchBroker(t, writer.FlushAsync)
	a := make(answers, 16)
	fc := netloop.NewFakeConn(bb.srv, -1, a.onWrite)
	t.Cleanup(fc.Shutdown)
	create := remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": benchTopic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}, nil)
	f, _ := remoting.EncodeFrame(create)
	fc.Feed(f)
	if r := a.next(t); r.Code != remoting.Success {
		t.Fatalf("create topic: %d %s", r.Code, r.Remark)
	}
	props := func(kv ...string) string {
		var b []byte
		for i := 0; i < len(kv); i += 2 {
			b = message.AppendProperty(b, kv[i], kv[i+1])
		}
		return string(b)
	}
	v2 := func(queue, p string) map[string]string {
		return map[string]string{"a": "g", "b": benchTopic, "c": "TBW102", "d": "4", "e": queue, "f": "0",
			"g": "1700000000000", "h": "3", "i": p, "j": "0", "k": "false", "m": "false", "n": "broker-a"}
	}
	tests := []struct {
		name string
		code int32
		st   remoting.SerializeType
		ext  map[string]string
	}{
		{"go client", remoting.SendMessageV2, remoting.SerializeJSON,
			v2("1", props("UNIQ_KEY", "AC110001000000000000000000000001", "WAIT", "true", "TAGS", "TagA", "KEYS", "k1 k2"))},
		{"native producer, binary", remoting.SendMessageV2, remoting.SerializeRocketMQ,
			v2("2", props("TAGS", "x", "UNIQ_KEY", "AC110001000000000000000000000002", "WAIT", "true"))},
		{"no UNIQ_KEY, client CLUSTER, no trailing separator", remoting.SendMessageV2, remoting.SerializeJSON,
			v2("3", "CLUSTER\x01mine\x02a\x01b")},
		{"no properties, any queue", remoting.SendMessageV2, remoting.SerializeJSON, v2("-1", "")},
		{"v1 names", remoting.SendMessage, remoting.SerializeJSON, map[string]string{
			"producerGroup": "g", "topic": benchTopic, "queueId": "0", "sysFlag": "0", "bornTimestamp": "5",
			"flag": "0", "properties": props("UNIQ_KEY", "AC110001000000000000000000000009")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := remoting.NewRequest(tt.code, tt.ext, []byte("the body "+tt.name))
			cmd.Opaque, cmd.Serialize = 7, tt.st
			hot, err := remoting.EncodeFrame(cmd)
			if err != nil {
				t.Fatal(err)
			}
			ref := *cmd
			ref.Serialize = remoting.SerializeJSON
			general, _ := remoting.EncodeFrame(&ref)
			general = viaGeneralPath(t, general)
			var stored [2]message.Record
			var resp [2]*remoting.Command
			for i, frame := range [][]byte{hot, general} {
				fc.Feed(frame)
				resp[i] = a.next(t)
				if resp[i].Code != remoting.Success || resp[i].Opaque != 7 {
					t.Fatalf("answer %d: code %d opaque %d remark %q", i, resp[i].Code, resp[i].Opaque, resp[i].Remark)
				}
				_, off, err := message.ParseOffsetMsgID(resp[i].Field("msgId"))
				if err != nil {
					t.Fatal(err)
				}
				rec, _, err := bb.pipe.Store().CommitLog.Read(off)
				if err != nil {
					t.Fatal(err)
				}
				if stored[i], _, err = message.Decode(rec); err != nil {
					t.Fatal(err)
				}
			}
			if resp[0].Serialize != tt.st {
				t.Errorf("answered in %v, asked in %v", resp[0].Serialize, tt.st)
			}
			for _, k := range []string{"MSG_REGION", "TRACE_ON"} {
				if resp[0].Field(k) != resp[1].Field(k) {
					t.Errorf("%s: %q vs %q", k, resp[0].Field(k), resp[1].Field(k))
				}
			}
			if len(resp[0].ExtFields) != len(resp[1].ExtFields) {
				t.Errorf("answer fields %v vs %v", resp[0].ExtFields, resp[1].ExtFields)
			}
			hp, gp := message.DecodeProperties(stored[0].Properties), message.DecodeProperties(stored[1].Properties)
			if resp[0].Field("transactionId") != hp[message.PropUniqKey] || resp[1].Field("transactionId") != gp[message.PropUniqKey] {
				t.Errorf("transactionId %q / %q, stored UNIQ_KEY %q / %q", resp[0].Field("transactionId"),
					resp[1].Field("transactionId"), hp[message.PropUniqKey], gp[message.PropUniqKey])
			}
			if _, ok := tt.ext["e"]; (ok && tt.ext["e"] != "-1") || tt.code == remoting.SendMessage {
				if resp[0].Field("queueId") != resp[1].Field("queueId") {
					t.Errorf("queueId %s vs %s", resp[0].Field("queueId"), resp[1].Field("queueId"))
				}
			}
			q0, _ := strconv.ParseInt(resp[0].Field("queueOffset"), 10, 64)
			if q0 != stored[0].QueueOffset {
				t.Errorf("answered queue offset %d, stored %d", q0, stored[0].QueueOffset)
			}
			if !bytes.Equal(stored[1].Properties, message.EncodeProperties(gp)) {
				t.Errorf("general path properties %q are not the sorted encoding", stored[1].Properties)
			}
			if hp[message.PropUniqKey] == "" || gp[message.PropUniqKey] == "" {
				t.Fatalf("no UNIQ_KEY stored: %v / %v", hp, gp)
			}
			if _, given := message.DecodeProperties([]byte(cmd.Field("i") + cmd.Field("properties")))[message.PropUniqKey]; !given {
				delete(hp, message.PropUniqKey) // generated: differs
				delete(gp, message.PropUniqKey)
			}
			// The hot path appended CLUSTER to the client's properties; the
			// general path re-encoded them sorted: the two paths were taken.
			if !bytes.HasSuffix(stored[0].Properties, []byte("CLUSTER\x01DefaultCluster\x02")) {
				t.Errorf("hot path properties %q do not end with CLUSTER", stored[0].Properties)
			}
			if !maps.Equal(hp, gp) {
				t.Errorf("stored properties\n%v\nvs general path\n%v", hp, gp)
			}
			s0, s1 := stored[0], stored[1]
			if s0.Topic != s1.Topic || !bytes.Equal(s0.Body, []byte("the body "+tt.name)) || !bytes.Equal(s0.Body, s1.Body) ||
				s0.Flag != s1.Flag || s0.SysFlag != s1.SysFlag || s0.BornTimestamp != s1.BornTimestamp ||
				s0.BornHost != s1.BornHost || s0.StoreHost != s1.StoreHost || s0.ReconsumeTimes != s1.ReconsumeTimes ||
				(tt.ext["e"] != "-1" && s0.QueueID != s1.QueueID) {
				t.Errorf("stored\n%+v\nvs general path\n%+v", s0, s1)
			}
		})
	}
}
