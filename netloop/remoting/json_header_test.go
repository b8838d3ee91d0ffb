package remoting

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeJSONHeaderForms(t *testing.T) {
	tests := []struct {
		name   string
		header string
		want   Command
	}{
		{
			name:   "go client",
			header: goClientJSON,
			want: Command{Code: 34, Language: "GO", Version: 317, Opaque: 1,
				ExtFields: map[string]string{"topic": "T"}},
		},
		{
			name: "java fastjson sorted with extra field",
			header: `{"code":0,"extFields":{"queueId":"1"},"flag":1,"language":"JAVA","opaque":7,` +
				`"serializeTypeCurrentRPC":"JSON","version":479}`,
			want: Command{Code: 0, Language: "JAVA", Version: 479, Opaque: 7, Flag: 1,
				ExtFields: map[string]string{"queueId": "1"}},
		},
		{
			name:   "remark and extFields null",
			header: `{"code":105,"remark":null,"extFields":null,"language":"CPP","opaque":3}`,
			want:   Command{Code: 105, Language: "CPP", Opaque: 3, ExtFields: map[string]string{}},
		},
		{
			name:   "absent everything",
			header: `{}`,
			want:   Command{ExtFields: map[string]string{}},
		},
		{
			name:   "whitespace and unknown nested fields",
			header: " \n{ \"code\" : 11 , \"unknown\" : {\"x\":[1,2,{}]}, \"extFields\" : { \"a\" : \"b\" } }\n",
			want:   Command{Code: 11, ExtFields: map[string]string{"a": "b"}},
		},
		{
			name:   "escapes in strings",
			header: `{"remark":"a\"b\\c\n\u00e9\ud83d\ude00","extFields":{"k\u0000":"\t"}}`,
			want:   Command{Remark: "a\"b\\c\né😀", ExtFields: map[string]string{"k\x00": "\t"}},
		},
		{
			name:   "null ext value",
			header: `{"extFields":{"a":null}}`,
			want:   Command{ExtFields: map[string]string{"a": ""}},
		},
		{
			name:   "negative numbers",
			header: `{"code":-1,"opaque":-2147483648,"flag":3}`,
			want:   Command{Code: -1, Opaque: -2147483648, Flag: 3, ExtFields: map[string]string{}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeJSONHeader([]byte(tc.header))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got.ExtFields == nil {
				t.Fatal("ExtFields is nil")
			}
			if d := sameCommand(got, &tc.want); d != "" {
				t.Fatal(d)
			}
		})
	}
}

func TestEncodeJSONHeaderMatchesGoClient(t *testing.T) {
	c := &Command{Code: 34, Language: "GO", Version: 317, Opaque: 1, ExtFields: map[string]string{"topic": "T"}}
	if got := string(appendJSONHeader(nil, c)); got != goClientJSON {
		t.Fatalf("got  %s\nwant %s", got, goClientJSON)
	}
	// nil ExtFields still writes an empty object: the Go client always does.
	c.ExtFields = nil
	want := strings.Replace(goClientJSON, `{"topic":"T"}`, `{}`, 1)
	if got := string(appendJSONHeader(nil, c)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestEncodeJSONHeaderSortsKeys(t *testing.T) {
	ext := map[string]string{}
	for _, k := range strings.Fields("z y x w v u t s r q p o n m l k j i h g f e d c b a aa ab ac ad ae af ag ah") {
		ext[k] = k
	}
	first := string(appendJSONHeader(nil, &Command{ExtFields: ext}))
	for range 20 {
		if got := string(appendJSONHeader(nil, &Command{ExtFields: ext})); got != first {
			t.Fatalf("encoding is not deterministic:\n%s\n%s", first, got)
		}
	}
	if !strings.Contains(first, `{"a":"a","aa":"aa","ab":"ab"`) {
		t.Fatalf("keys not sorted: %s", first)
	}
}

func TestAppendJSONString(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", `""`},
		{"plain", `"plain"`},
		{`q"b\s`, `"q\"b\\s"`},
		{"\n\r\t", `"\n\r\t"`},
		{"\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"é😀/<>&", `"é😀/<>&"`},
		{"bad\xffutf8\xc3", `"bad\ufffdutf8\ufffd"`},
		{"\u2028", "\"\u2028\""},
	}
	for _, tc := range tests {
		got := string(appendJSONString(nil, tc.in))
		if got != tc.want {
			t.Errorf("appendJSONString(%q) = %s, want %s", tc.in, got, tc.want)
		}
		// encoding/json must read back the same string (modulo invalid UTF-8).
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Errorf("json.Unmarshal(%s): %v", got, err)
		}
		if utf8.ValidString(tc.in) && back != tc.in {
			t.Errorf("round trip of %q gave %q", tc.in, back)
		}
	}
}

// stdJSONHeader is the reference decoder: the header struct through
// encoding/json. decodeJSONHeader must agree with it.
type stdJSONHeader struct {
	Code      int32             `json:"code"`
	Language  string            `json:"language"`
	Version   int32             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
}

// decodeJSONHeaderStd decodes with encoding/json, requiring an object.
func decodeJSONHeaderStd(header []byte) (*Command, error) {
	trimmed := strings.TrimLeft(string(header), " \t\r\n")
	if !strings.HasPrefix(trimmed, "{") {
		return nil, ErrMalformed
	}
	var h stdJSONHeader
	if err := json.Unmarshal(header, &h); err != nil {
		return nil, err
	}
	if h.ExtFields == nil {
		h.ExtFields = map[string]string{}
	}
	return &Command{Code: h.Code, Language: h.Language, Version: h.Version, Opaque: h.Opaque,
		Flag: h.Flag, Remark: h.Remark, ExtFields: h.ExtFields}, nil
}

// checkJSONAgainstStd fails when decodeJSONHeader and encoding/json
// disagree on header.
func checkJSONAgainstStd(t *testing.T, header []byte) {
	t.Helper()
	got, err := decodeJSONHeader(header)
	want, werr := decodeJSONHeaderStd(header)
	if (err == nil) != (werr == nil) {
		t.Fatalf("%q: decodeJSONHeader err=%v, encoding/json err=%v", header, err, werr)
	}
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("%q: error %v does not wrap ErrMalformed", header, err)
		}
		return
	}
	if d := sameCommand(got, want); d != "" {
		t.Fatalf("%q: differs from encoding/json: %s", header, d)
	}
}

func TestDecodeJSONHeaderMatchesEncodingJSON(t *testing.T) {
	headers := []string{
		goClientJSON,
		`{"CODE":1,"Language":"x","EXTFIELDS":{"a":"b"},"ſlag":2,"remarK":"r"}`, // case folding, incl. long s
		`{"extFields":{"a":"1"},"extFields":{"b":"2"}}`,                         // repeated object merges
		`{"extFields":{"a":"1"},"extFields":null}`,
		`{"extFields":{"a":"1","a":null}}`,
		`{"code":1,"code":null}`,
		`{"remark":"x","remark":null}`,
		`{"code":-0}`, `{"code":01}`, `{"code":1.0}`, `{"code":1e2}`, `{"code":2147483648}`,
		`{"code":-2147483648}`, `{"code":-}`, `{"code":1.}`, `{"code":.5}`, `{"code":+1}`,
		`{"x":-1.5e+10}`, `{"x":1E-2}`, `{"x":1e}`, `{"x":[1,2,[3,{"a":[]}]]}`, `{"x":[1,]}`,
		`{"x":{"a":1,}}`, `{"x":tru}`, `{"x":true,"y":false,"z":null}`, `{"x":nul}`,
		`{"remark":"\ud800"}`, `{"remark":"\ud800\u0041"}`, `{"remark":"\udc00\ud800"}`,
		`{"remark":"\ud83d\ude00"}`, `{"remark":"\uD83D\uDE00"}`, `{"remark":"\u00"}`,
		`{"remark":"\x"}`, `{"remark":"\'"}`, "{\"remark\":\"a\tb\"}", "{\"remark\":\"\xff\xfe\"}",
		"{\"remark\":\"\x7f\"}", `{"remark":"\/"}`, `{"remark":"\b\f"}`, `{"remark":1}`,
		`{"language":{}}`, `{"extFields":[]}`, `{"extFields":{"a":1}}`, `{"extFields":{"a":{}}}`,
		`{"extFields":{1:"a"}}`, `{"extFields":"x"}`, `{"code":true}`, `{"code":"1"}`,
		`{}`, `{} `, ` {}`, `{},`, `{}{}`, `{`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{"a":1 "b":2}`,
		"{\"a\":1}\x00", `{"co\u0064e":5}`, "\ufeff{}", `null`, `[]`, `"x"`, ``,
		"{\"a\":\"" + strings.Repeat("\\u0041", 100) + "\"}",
		`{"a":` + strings.Repeat("[", maxJSONDepth-1) + strings.Repeat("]", maxJSONDepth-1) + `}`,
		`{"a":` + strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth) + `}`,
	}
	for _, h := range headers {
		checkJSONAgainstStd(t, []byte(h))
	}
}
