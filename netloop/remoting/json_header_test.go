package remoting

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wheelmq/wheelmq/storage/lenient"
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
			name:   "null ext value is absent",
			header: `{"extFields":{"a":null,"b":"x"}}`,
			want:   Command{ExtFields: map[string]string{"b": "x"}},
		},
		{
			name: "ali-ons send: ext numbers and booleans as their text",
			header: `{"code":310,"language":"JAVA","opaque":3,"flag":0,"version":121,"extFields":{"a":"PG","b":"T",` +
				`"c":"TBW102","d":4,"e":1,"f":0,"g":1764460800000,"h":0,"i":"TAGS\u0001TagA\u0002","j":0,"k":false}}`,
			want: Command{Code: 310, Language: "JAVA", Version: 121, Opaque: 3, ExtFields: map[string]string{
				"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1764460800000", "h": "0",
				"i": "TAGS\x01TagA\x02", "j": "0", "k": "false"}},
		},
		{
			name:   "ext number forms keep their text",
			header: `{"extFields":{"a":1.5,"b":-7,"c":12345678901234,"d":1e3,"e":true,"f":-0}}`,
			want: Command{ExtFields: map[string]string{"a": "1.5", "b": "-7", "c": "12345678901234", "d": "1e3",
				"e": "true", "f": "-0"}},
		},
		{
			name:   "ext objects and arrays as their text",
			header: `{"extFields":{"o":{"x":1},"a":[1, 2]}}`,
			want:   Command{ExtFields: map[string]string{"o": `{"x":1}`, "a": `[1, 2]`}},
		},
		{
			name:   "numeric fields as strings and booleans",
			header: `{"code":"10","opaque":"-5","flag":true,"version":""}`,
			want:   Command{Code: 10, Opaque: -5, Flag: 1, ExtFields: map[string]string{}},
		},
		{
			name:   "numeric fields with fraction and exponent",
			header: `{"code":10.0,"opaque":1e2,"flag":-2.9,"version":false}`,
			want:   Command{Code: 10, Opaque: 100, Flag: -2, ExtFields: map[string]string{}},
		},
		{
			name:   "language ordinal",
			header: `{"language":9}`,
			want:   Command{Language: "GO", ExtFields: map[string]string{}},
		},
		{
			name:   "language ordinal out of table",
			header: `{"language":99}`,
			want:   Command{Language: "OTHER", ExtFields: map[string]string{}},
		},
		{
			name:   "remark as a number",
			header: `{"remark":404}`,
			want:   Command{Remark: "404", ExtFields: map[string]string{}},
		},
		{
			name: "cpp client: 32-bit numbers, the rest strings, empty credentials, trailing newline",
			header: `{"code":310,"extFields":{"AccessKey":"","OnsChannel":"","Signature":"","a":"PG","b":"T","c":"TBW102",` +
				`"d":4,"e":2,"f":0,"g":"1764460800000","h":0,"i":"","j":"0","k":"false","m":"false"},` +
				`"flag":0,"language":"CPP","opaque":8,"remark":"","serializeTypeCurrentRPC":"JSON","version":333}` + "\n",
			want: Command{Code: 310, Language: "CPP", Version: 333, Opaque: 8, ExtFields: map[string]string{
				"AccessKey": "", "OnsChannel": "", "Signature": "", "a": "PG", "b": "T", "c": "TBW102", "d": "4",
				"e": "2", "f": "0", "g": "1764460800000", "h": "0", "i": "", "j": "0", "k": "false", "m": "false"}},
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

// errReference is the reference decoder's refusal.
var errReference = errors.New("reference decoder refused the header")

// decodeJSONHeaderReference is the reference for decodeJSONHeader: the
// lenient rules of json_header.go written a second way, on encoding/json's
// validator and tokenizer. decodeJSONHeader must agree with it on every
// input, in what it accepts and what it produces.
func decodeJSONHeaderReference(header []byte) (*Command, error) {
	if !json.Valid(header) {
		return nil, errReference
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errReference
	}
	c := &Command{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		var field string
		for _, f := range jsonFields {
			if strings.EqualFold(tok.(string), f) {
				field = f
			}
		}
		switch field {
		case jsonFieldCode:
			err = referenceInt32(raw, &c.Code)
		case jsonFieldVersion:
			err = referenceInt32(raw, &c.Version)
		case jsonFieldOpaque:
			err = referenceInt32(raw, &c.Opaque)
		case jsonFieldFlag:
			err = referenceInt32(raw, &c.Flag)
		case jsonFieldLanguage:
			err = referenceLanguage(raw, &c.Language)
		case jsonFieldRemark:
			if text, present := referenceText(raw); present {
				c.Remark = text
			}
		case jsonFieldExtFields:
			err = referenceExtFields(raw, &c.ExtFields)
		}
		if err != nil {
			return nil, err
		}
	}
	if c.ExtFields == nil {
		c.ExtFields = map[string]string{}
	}
	return c, nil
}

// referenceInt32 applies the int32 field rules to one raw value, through
// lenient's Parse functions.
func referenceInt32(raw json.RawMessage, dst *int32) error {
	v, set, err := lenient.ParseInt(raw, 32)
	if err != nil {
		return errReference
	}
	if set {
		*dst = int32(v)
	}
	return nil
}

// referenceLanguage applies the language rules to one raw value.
func referenceLanguage(raw json.RawMessage, dst *string) error {
	switch raw[0] {
	case 'n':
		return nil
	case '"':
		return json.Unmarshal(raw, dst)
	case 't', 'f', '{', '[':
		return errReference
	}
	*dst = "OTHER"
	if i, ok := lenient.EnumOrdinal(raw, len(languageNames)); ok {
		*dst = languageNames[i]
	}
	return nil
}

// referenceText reads a value as text (lenient.ParseString); null is not
// present.
func referenceText(raw json.RawMessage) (string, bool) {
	s, set, err := lenient.ParseString(raw)
	if err != nil {
		panic(err) // raw came from a valid document
	}
	return s, set
}

// referenceExtFields merges one extFields value into *dst.
func referenceExtFields(raw json.RawMessage, dst *map[string]string) error {
	switch raw[0] {
	case 'n':
		*dst = nil
		return nil
	case '{':
	default:
		return errReference
	}
	var m map[string]json.RawMessage // last of repeated keys wins
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	if *dst == nil {
		*dst = map[string]string{}
	}
	for k, v := range m {
		if text, present := referenceText(v); present {
			(*dst)[k] = text
		} else {
			delete(*dst, k)
		}
	}
	return nil
}

// checkJSONAgainstReference fails when decodeJSONHeader and the reference
// decoder disagree on header.
func checkJSONAgainstReference(t *testing.T, header []byte) {
	t.Helper()
	got, err := decodeJSONHeader(header)
	want, werr := decodeJSONHeaderReference(header)
	if (err == nil) != (werr == nil) {
		t.Fatalf("%q: decodeJSONHeader err=%v, reference err=%v", header, err, werr)
	}
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("%q: error %v does not wrap ErrMalformed", header, err)
		}
		return
	}
	if d := sameCommand(got, want); d != "" {
		t.Fatalf("%q: differs from the reference decoder: %s", header, d)
	}
}

func TestDecodeJSONHeaderMatchesReference(t *testing.T) {
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
		// lenient values
		`{"code":"1"}`, `{"code":""}`, `{"code":"abc"}`, `{"code":" 1"}`, `{"code":"+1"}`, `{"code":"1.0"}`,
		`{"code":true}`, `{"code":false}`, `{"code":[]}`, `{"code":{}}`, `{"code":1.9}`, `{"code":-1.9}`,
		`{"code":2147483647.9}`, `{"code":-2147483648.9}`, `{"code":2147483648.0}`, `{"code":1e400}`,
		`{"code":1e-400}`, `{"opaque":4294967295}`, `{"opaque":"4294967295"}`, `{"code":"\u0031\u0030"}`,
		`{"language":9}`, `{"language":13}`, `{"language":14}`, `{"language":-1}`, `{"language":9.5}`,
		`{"language":true}`, `{"language":[]}`, `{"language":1e400}`,
		`{"remark":1}`, `{"remark":true}`, `{"remark":{"a":[1]}}`, `{"remark":"x","remark":2}`,
		`{"extFields":{"a":1,"b":true,"c":null,"d":1.5,"e":{"x":1},"f":[1,2],"g":12345678901234,"i":-7}}`,
		`{"extFields":{"a":"1"},"extFields":{"a":null}}`, `{"extFields":{"a":null,"a":1}}`,
		"{\"extFields\":{\"a\":[\"\xff\"]}}", "{\"extFields\":{\"a\":{ \"b\" :\t1 }}}",
		`{"extFields":{"a":1e}}`, `{"extFields":{"a":-}}`, `{"extFields":{"a":nul}}`, `{"extFields":{"a":}}`,
		"{\"a\":\"" + strings.Repeat("\\u0041", 100) + "\"}",
		`{"a":` + strings.Repeat("[", maxJSONDepth-1) + strings.Repeat("]", maxJSONDepth-1) + `}`,
		`{"a":` + strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth) + `}`,
	}
	for _, h := range headers {
		checkJSONAgainstReference(t, []byte(h))
	}
}
