package remoting

import (
	"bytes"
	"fmt"
	"testing"
)

// checkViewAgrees parses frame (after the length field) with a HeaderView
// and, when the view accepts it, checks DecodeFrame agrees on everything
// the view exposes. It reports whether the view accepted the frame.
func checkViewAgrees(t *testing.T, v *HeaderView, frame []byte) bool {
	t.Helper()
	err := v.Parse(frame)
	if err != nil {
		return false
	}
	c, derr := DecodeFrame(frame)
	if derr != nil {
		t.Fatalf("view accepted a frame DecodeFrame refuses (%v): %q", derr, frame)
	}
	switch {
	case c.Code != v.Code, c.Version != v.Version, c.Opaque != v.Opaque, c.Flag != v.Flag:
		t.Fatalf("fixed fields: view %d/%d/%d/%d, decoded %d/%d/%d/%d", v.Code, v.Version, v.Opaque, v.Flag,
			c.Code, c.Version, c.Opaque, c.Flag)
	case c.Serialize != v.Serialize:
		t.Fatalf("serialize: view %v, decoded %v", v.Serialize, c.Serialize)
	case !bytes.Equal(c.Body, v.Body):
		t.Fatalf("body: view %q, decoded %q", v.Body, c.Body)
	}
	keys := map[string]bool{}
	v.Fields(func(k, _ []byte) { keys[string(k)] = true })
	if len(keys) != len(c.ExtFields) {
		t.Fatalf("view has %d distinct keys, decoded %d: %v", len(keys), len(c.ExtFields), c.ExtFields)
	}
	for k, want := range c.ExtFields {
		got, ok := v.Field(k)
		if !ok || string(got) != want {
			t.Fatalf("field %q: view %q (%v), decoded %q", k, got, ok, want)
		}
	}
	return true
}

func TestHeaderViewAgreesWithDecode(t *testing.T) {
	props := "UNIQ_KEY\x01AC11000100002A9F0000000000000001\x02WAIT\x01true\x02"
	ext := map[string]string{"a": "g", "b": "Topic", "e": "3", "i": props, "quote\"d": "back\\slash", "ü": "é"}
	var v HeaderView
	tests := []struct {
		name  string
		frame []byte
		plain bool
	}{
		{"json", encodeFor(t, SerializeJSON, ext), true},
		{"binary", encodeFor(t, SerializeRocketMQ, ext), true},
		{"json empty ext", encodeFor(t, SerializeJSON, nil), true},
		{"json number value", frameOf(SerializeJSON, []byte(`{"code":10,"extFields":{"a":1}}`), nil)[4:], false},
		{"json null ext", frameOf(SerializeJSON, []byte(`{"code":10,"extFields":null}`), nil)[4:], false},
		{"json object remark", frameOf(SerializeJSON, []byte(`{"code":10,"remark":{}}`), nil)[4:], false},
		{"json string code, upper-case names", frameOf(SerializeJSON,
			[]byte(`{"CODE":"310","Opaque":7.9,"flag":true,"language":9,"extFields":{"k":"v"},"x":[1,{"y":null}]}`), []byte("body"))[4:], true},
		{"json repeated key", frameOf(SerializeJSON, []byte(`{"extFields":{"k":"1","k":"2"}}`), nil)[4:], true},
		{"json trailing bytes", frameOf(SerializeJSON, []byte(`{"code":1} x`), nil)[4:], false},
		{"json escaped key and value", frameOf(SerializeJSON, []byte(`{"extFields":{"\u0041b":"x\u0001y\ud83d\ude00","n":"\n"}}`), nil)[4:], true},
		{"json invalid utf-8", frameOf(SerializeJSON, []byte("{\"extFields\":{\"k\":\"a\xffb\"}}"), nil)[4:], true},
		{"truncated", encodeFor(t, SerializeJSON, ext)[:20], false},
		{"bad serialize type", frameOf(SerializeType(7), []byte(`{}`), nil)[4:], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkViewAgrees(t, &v, tt.frame); got != tt.plain {
				t.Fatalf("view accepted = %v, want %v (%v)", got, tt.plain, v.Parse(tt.frame))
			}
		})
	}
	for _, s := range goldenSeeds(t) {
		checkViewAgrees(t, &v, s[4:])
	}
}

// encodeFor encodes a SEND_MESSAGE_V2 request with ext and a body, and
// returns it without the length field.
func encodeFor(t *testing.T, st SerializeType, ext map[string]string) []byte {
	t.Helper()
	c := NewRequest(SendMessageV2, ext, []byte("the body"))
	c.Opaque, c.Serialize = 77, st
	f, err := EncodeFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	return f[4:]
}

func TestHeaderViewDoesNotAllocate(t *testing.T) {
	ext := map[string]string{"a": "group", "b": "Topic", "c": "TBW102", "d": "4", "e": "3", "f": "0",
		"g": "1700000000000", "h": "0", "i": "UNIQ_KEY\x01AC11000100002A9F0000000000000001\x02WAIT\x01true\x02",
		"j": "0", "k": "false", "m": "false", "n": "broker-a"}
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		frame := encodeFor(t, st, ext)
		var v HeaderView
		if err := v.Parse(frame); err != nil { // grows the view's buffers once
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			if err := v.Parse(frame); err != nil {
				t.Fatal(err)
			}
			if b, ok := v.Field("i"); !ok || !bytes.HasPrefix(b, []byte("UNIQ_KEY")) {
				t.Fatalf("field i = %q", b)
			}
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per Parse, want 0", st, allocs)
		}
	}
}

func TestAppendResponseFrameMatchesEncode(t *testing.T) {
	tests := []struct {
		code   int32
		remark string
		ext    []ExtField
		body   []byte
	}{
		{Success, "", []ExtField{{"MSG_REGION", []byte("DefaultRegion")}, {"TRACE_ON", []byte("true")},
			{"msgId", []byte("7F00000100002A9F0000000000001234")}, {"queueId", []byte("3")},
			{"queueOffset", []byte("42")}, {"transactionId", []byte("AC11")}}, nil},
		{SystemError, "bad \"thing\"\n\x01 é \xff", []ExtField{{"k", []byte("v\x02\\")}}, []byte("body")},
		{PullNotFound, "", nil, nil},
	}
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		for i, tt := range tests {
			t.Run(fmt.Sprintf("%v/%d", st, i), func(t *testing.T) {
				req := &Command{Opaque: 991, Serialize: st}
				want := NewResponse(req, tt.code, tt.remark)
				for _, f := range tt.ext {
					want.SetField(f.Key, string(f.Value))
				}
				want.Body = tt.body
				wantFrame, err := EncodeFrame(want)
				if err != nil {
					t.Fatal(err)
				}
				got, err := AppendResponseFrame([]byte("prefix"), st, 991, tt.code, tt.remark, tt.ext, tt.body)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[len("prefix"):], wantFrame) {
					t.Fatalf("frame\n%q\nwant\n%q", got[len("prefix"):], wantFrame)
				}
			})
		}
	}
}

func FuzzHeaderView(f *testing.F) {
	for _, s := range goldenSeeds(f) {
		f.Add(s[4:])
	}
	f.Add(frameOf(SerializeJSON, []byte(`{"CODE":"310","extFields":{"\u0041":"x\u0001"}}`), []byte("b"))[4:])
	f.Add(frameOf(SerializeJSON, []byte(`{"extFields":{"k":"1"},"extFields":{}}`), nil)[4:])
	f.Fuzz(func(t *testing.T, data []byte) {
		var v HeaderView
		checkViewAgrees(t, &v, data)
		// A view reused after another frame agrees too.
		checkViewAgrees(t, &v, data)
	})
}

func TestPeekCode(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		for _, code := range []int32{SendMessage, SendMessageV2, PullMessage, 0} {
			c := NewRequest(code, map[string]string{"k": "v"}, nil)
			c.Serialize = st
			f, err := EncodeFrame(c)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := PeekCode(f[4:])
			if !ok || got != code {
				t.Errorf("%v code %d: PeekCode = %d, %v", st, code, got, ok)
			}
		}
	}
	for _, h := range []string{`{"opaque":1,"code":10}`, `{"code":-1}`, `{"code":1.5}`, `{"code":"10"}`, `{"code":1234567}`} {
		if code, ok := PeekCode(frameOf(SerializeJSON, []byte(h), nil)[4:]); ok {
			t.Errorf("PeekCode(%s) = %d, true; want unknown", h, code)
		}
	}
}
