package remoting

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// goldenSeeds returns the golden frames (from the test table, so a missing
// testdata file does not hide seeds) plus truncations of each.
func goldenSeeds(t interface{ Fatal(...any) }) [][]byte {
	var seeds [][]byte
	for _, tc := range goldenCases {
		frame := tc.raw
		if frame == nil {
			c := *tc.cmd
			var err error
			if frame, err = EncodeFrame(&c); err != nil {
				t.Fatal(err)
			}
		}
		seeds = append(seeds, frame, frame[:len(frame)/2], frame[:9])
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.hex"))
	for _, f := range files {
		if text, err := os.ReadFile(f); err == nil {
			if b, err := parseHexDump(string(text)); err == nil {
				seeds = append(seeds, b)
			}
		}
	}
	return seeds
}

// checkReencode encodes a decoded command, decodes it again and checks the
// two commands match and that a second encoding is byte-identical.
func checkReencode(t *testing.T, c *Command) {
	t.Helper()
	frame, err := EncodeFrame(c)
	if err != nil {
		t.Fatalf("re-encode of decoded %+v: %v", c, err)
	}
	back, err := DecodeFrame(frame[4:])
	if err != nil {
		t.Fatalf("decode of re-encoded frame %x: %v", frame, err)
	}
	if d := sameCommand(back, c); d != "" {
		t.Fatalf("round trip differs: %s", d)
	}
	again, err := EncodeFrame(back)
	if err != nil || !bytes.Equal(again, frame) {
		t.Fatalf("encoding is not canonical: %x vs %x (%v)", again, frame, err)
	}
}

func FuzzDecodeFrame(f *testing.F) {
	for _, s := range goldenSeeds(f) {
		f.Add(s[4:]) // DecodeFrame input starts after the length field
		f.Add(s)     // and the whole frame, for ReadFrame
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := ReadFrame(bytes.NewReader(data), 1<<16); err == nil {
			checkReencode(t, c)
		}
		c, err := DecodeFrame(data)
		if err != nil {
			if c != nil {
				t.Fatalf("command %+v returned with error %v", c, err)
			}
			return
		}
		if len(c.Body) > 0 && len(data) > 0 {
			data[len(data)-1] ^= 0xff
			if c.Body[len(c.Body)-1] == data[len(data)-1] {
				t.Fatal("body aliases the input")
			}
		}
		checkReencode(t, c)
	})
}

func FuzzJSONHeader(f *testing.F) {
	f.Add([]byte(goClientJSON))
	f.Add([]byte(`{"code":0,"extFields":{"queueId":"1"},"flag":1,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":479}`))
	f.Add([]byte(`{"code":105,"remark":null,"extFields":null}`))
	f.Add([]byte(`{"remark":"a\"b\\c\n\u00e9\ud83d\ude00","extFields":{"k\u0000":"\t"}}`))
	f.Add([]byte(`{"code":1e2}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"CODE":1,"extFields":{"a":"1"},"extFields":{"b":null},"x":[1,{"y":-1.5e+3}],"remark":"\ud800\u0041"}`))
	f.Add([]byte(`{"code":"10","opaque":2147483647.5,"flag":true,"version":"","language":13,"remark":[1],"extFields":{"a":1,"b":null}}`))
	// The JSON headers of the golden frames: the Go, Java, ali-ons and C++
	// client forms and the lenient variants.
	for _, tc := range goldenCases {
		if len(tc.raw) > 8 && SerializeType(tc.raw[4]) == SerializeJSON {
			h := int(tc.raw[5])<<16 | int(tc.raw[6])<<8 | int(tc.raw[7])
			f.Add(tc.raw[8 : 8+h])
		}
	}
	f.Fuzz(func(t *testing.T, header []byte) {
		checkJSONAgainstReference(t, header)
		c, err := decodeJSONHeader(header)
		if err != nil {
			return
		}
		checkReencode(t, c)
	})
}

func FuzzBinaryHeader(f *testing.F) {
	f.Add(mustHex("000a 09 013d 00000002 00000000 00000001 72 00000008 0001 6b 00000001 76"))
	f.Add(mustHex("0000 00 01df 00000007 00000001 00000000 00000000"))
	f.Add(mustHex("ffff 0d ffff ffffffff 00000002 00000000 00000006 0000 00000000"))
	f.Add(mustHex("000a 09 013d 00000002 00000000 7fffffff 00000000"))
	f.Fuzz(func(t *testing.T, header []byte) {
		c, err := decodeBinaryHeader(header)
		if err != nil {
			return
		}
		c.Serialize = SerializeRocketMQ
		checkReencode(t, c)
	})
}

// FuzzCommandRoundTrip builds commands from fields and checks that
// decode(encode(c)) == c in both header encodings.
func FuzzCommandRoundTrip(f *testing.F) {
	f.Add(int32(34), int32(317), int32(1), int32(0), "GO", "", "topic", "T", "", "", []byte("BODY"), false)
	f.Add(int32(10), int32(317), int32(2), int32(0), "GO", "r", "k", "v", "", "", []byte(nil), true)
	f.Add(int32(0), int32(479), int32(7), int32(1), "JAVA", "err \"x\"\n", "queueId", "1", "msgId", "abc", []byte{0}, true)
	f.Add(int32(200050), int32(-1), int32(-1), int32(3), "KOTLIN", "\xff", "\x00", "\xfe", "a", "b", []byte{1, 2}, false)
	f.Fuzz(func(t *testing.T, code, version, opaque, flag int32, lang, remark, k1, v1, k2, v2 string, body []byte, bin bool) {
		c := &Command{Code: code, Language: lang, Version: version, Opaque: opaque, Flag: flag, Remark: remark,
			ExtFields: map[string]string{k1: v1, k2: v2}, Body: body}
		want := *c
		if bin {
			c.Serialize = SerializeRocketMQ
			want.Serialize = SerializeRocketMQ
			want.Language = languageName(languageCode(lang))
		}
		frame, err := EncodeFrame(c)
		if err != nil {
			fits := func(v int32) bool { return v >= math.MinInt16 && v <= math.MaxInt16 }
			if bin && (!fits(code) || !fits(version) || len(k1) > math.MaxInt16 || len(k2) > math.MaxInt16) {
				return
			}
			t.Fatalf("EncodeFrame(%+v): %v", c, err)
		}
		got, err := DecodeFrame(frame[4:])
		if err != nil {
			t.Fatalf("DecodeFrame(%x): %v", frame, err)
		}
		if !bin {
			for _, s := range []string{lang, remark, k1, v1, k2, v2} {
				if !utf8.ValidString(s) {
					return // JSON replaces invalid UTF-8; nothing exact to compare
				}
			}
		}
		if d := sameCommand(got, &want); d != "" {
			t.Fatalf("round trip differs: %s", d)
		}
	})
}
