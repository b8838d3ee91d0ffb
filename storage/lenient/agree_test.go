package lenient_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
	"github.com/wheelmq/wheelmq/storage/lenient"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// The readers of one JSON value that must agree: the request-header
// scanner (netloop/remoting, its own zero-allocation token path), the body
// value types (encoding/json with lenient.Int32 and friends), the metadata
// decoder (storage/meta's DecodeSubscriptionGroupConfig, which reads
// subscriptionGroup.json and the admin body) and lenient's Parse functions
// themselves. Each reading is "ERR", "keep" (null: the field keeps its
// value) or the value read.

// headerFrame builds a DecodeFrame input (header-length word, JSON header).
func headerFrame(header string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(header))) // serialize type 0 (JSON)
	return append(b, header...)
}

// headerInt32 reads v as a header's code: "keep" when it leaves the code
// set by an earlier "code" key (two of them, so that no value looks like
// one).
func headerInt32(v []byte) string {
	var got [2]int32
	for i, before := range []string{"-77", "-78"} {
		c, err := remoting.DecodeFrame(headerFrame(`{"code":` + before + `,"code":` + string(v) + `}`))
		if err != nil {
			return "ERR"
		}
		got[i] = c.Code
	}
	if got == [2]int32{-77, -78} {
		return "keep"
	}
	return strconv.Itoa(int(got[0]))
}

// headerText reads v as an extFields value.
func headerText(v []byte) string {
	c, err := remoting.DecodeFrame(headerFrame(`{"extFields":{"k":` + string(v) + `}}`))
	if err != nil {
		return "ERR"
	}
	s, ok := c.ExtFields["k"]
	if !ok {
		return "keep"
	}
	return strconv.Quote(s)
}

// headerLanguage reads v as the language field (an enum).
func headerLanguage(v []byte) string {
	var got [2]string
	for i, before := range []string{"a", "b"} {
		c, err := remoting.DecodeFrame(headerFrame(`{"language":"` + before + `","language":` + string(v) + `}`))
		if err != nil {
			return "ERR"
		}
		got[i] = c.Language
	}
	if got == [2]string{"a", "b"} {
		return "keep"
	}
	return got[0]
}

// languages is RocketMQ's LanguageCode table (wire format).
var languages = []string{"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO",
	"PHP", "OMS", "RUST", "NODE_JS"}

// bodyValue decodes v twice, into a value that holds a before and b
// before; it returns "ERR", "keep" (both left as they were) or the value
// formatted by show.
func bodyValue[T comparable](v []byte, a, b T, show func(T) string) string {
	x, y := a, b
	if err := json.Unmarshal(v, &x); err != nil {
		return "ERR"
	}
	if err := json.Unmarshal(v, &y); err != nil {
		return "ERR"
	}
	if x == a && y == b {
		return "keep"
	}
	return show(x)
}

func bodyInt32(v []byte) string {
	return bodyValue(v, -77, -78, func(n lenient.Int32) string { return strconv.Itoa(int(n)) })
}

func bodyInt64(v []byte) string {
	return bodyValue(v, -77, -78, func(n lenient.Int64) string { return strconv.FormatInt(int64(n), 10) })
}

func bodyText(v []byte) string {
	return bodyValue(v, "a", "b", func(s lenient.String) string { return strconv.Quote(string(s)) })
}

func bodyBool(v []byte) string {
	return bodyValue(v, true, false, func(b lenient.Bool) string { return strconv.FormatBool(bool(b)) })
}

// bodyEnum reads v as an enum body field (lenient.String, then Enum).
func bodyEnum(v []byte) string {
	return bodyValue(v, "a", "b", func(s lenient.String) string { return lenient.Enum(s, languages) })
}

func adminDouble(v []byte) string {
	return bodyValue(v, -77.5, -78.5, func(d adminbody.Double) string {
		return strconv.FormatFloat(float64(d), 'g', -1, 64)
	})
}

// metaGroup decodes a SubscriptionGroupConfig with v in the named fields.
func metaGroup(v []byte, fields ...string) (meta.SubscriptionGroupConfig, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", f, v)
	}
	b.WriteByte('}')
	return meta.DecodeSubscriptionGroupConfig(b.Bytes())
}

// metaPair formats two fields read from the same value whose defaults
// differ: both at their defaults is "keep", else they must agree.
func metaPair[T comparable](a, b, defA, defB T, show func(T) string) string {
	switch {
	case a == defA && b == defB:
		return "keep"
	case a != b:
		return fmt.Sprintf("DISAGREE(%v,%v)", a, b)
	}
	return show(a)
}

func metaInt32(v []byte) string {
	c, err := metaGroup(v, "retryMaxTimes", "consumeTimeoutMinute")
	if err != nil {
		return "ERR"
	}
	return metaPair(c.RetryMaxTimes, c.ConsumeTimeoutMinute, meta.DefaultRetryMaxTimes, meta.DefaultConsumeTimeoutMinute,
		func(n int32) string { return strconv.Itoa(int(n)) })
}

func metaInt64(v []byte) string {
	c, err := metaGroup(v, "brokerId", "whichBrokerWhenConsumeSlowly")
	if err != nil {
		return "ERR"
	}
	return metaPair(c.BrokerID, c.WhichBrokerWhenConsumeSlowly, 0, 1,
		func(n int64) string { return strconv.FormatInt(n, 10) })
}

func metaBool(v []byte) string {
	c, err := metaGroup(v, "consumeEnable", "consumeMessageOrderly")
	if err != nil {
		return "ERR"
	}
	return metaPair(c.ConsumeEnable, c.ConsumeMessageOrderly, true, false, strconv.FormatBool)
}

// metaText reads v as an attributes value (a map of strings).
func metaText(v []byte) string {
	c, err := meta.DecodeSubscriptionGroupConfig([]byte(`{"attributes":{"k":` + string(v) + `}}`))
	if err != nil {
		return "ERR"
	}
	s, ok := c.Attributes["k"]
	if !ok {
		return "keep"
	}
	return strconv.Quote(s)
}

// parsed formats a Parse function's result.
func parsed[T any](v T, set bool, err error, show func(T) string) string {
	switch {
	case err != nil:
		return "ERR"
	case !set:
		return "keep"
	}
	return show(v)
}

func parseInt(v []byte, bits int) string {
	n, set, err := lenient.ParseInt(v, bits)
	return parsed(n, set, err, func(n int64) string { return strconv.FormatInt(n, 10) })
}

func parseBool(v []byte) string {
	b, set, err := lenient.ParseBool(v)
	return parsed(b, set, err, strconv.FormatBool)
}

func parseText(v []byte) string {
	s, set, err := lenient.ParseString(v)
	return parsed(s, set, err, strconv.Quote)
}

func parseFloat(v []byte) string {
	f, set, err := lenient.ParseFloat(v)
	return parsed(f, set, err, func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) })
}

// readings returns every reader's result for v as a field of kind, by
// reader name.
func readings(kind string, v []byte) map[string]string {
	switch kind {
	case "int32":
		return map[string]string{"header": headerInt32(v), "body": bodyInt32(v), "meta": metaInt32(v), "parse": parseInt(v, 32)}
	case "int64":
		return map[string]string{"body": bodyInt64(v), "meta": metaInt64(v), "parse": parseInt(v, 64)}
	case "bool":
		return map[string]string{"body": bodyBool(v), "meta": metaBool(v), "parse": parseBool(v)}
	case "string":
		return map[string]string{"header": headerText(v), "body": bodyText(v), "meta": metaText(v), "parse": parseText(v)}
	case "enum":
		return map[string]string{"header": headerLanguage(v), "body": bodyEnum(v)}
	case "double":
		return map[string]string{"admin": adminDouble(v), "parse": parseFloat(v)}
	}
	panic("unknown kind " + kind)
}

// TestReadersAgree is the table of the values on which the three copies of
// the rules disagreed before they became package lenient (what the header
// scanner, the body types and storage/meta read then), and what every
// reader reads now. The enum row for the header is the language field:
// a number that is no ordinal in the table reads as OTHER there, while a
// body enum keeps the text (an unknown name).
func TestReadersAgree(t *testing.T) {
	tests := []struct {
		kind, in string
		// What the header scanner, the body types and storage/meta read
		// before ("-": that copy had no such field); documentation only.
		oldHeader, oldBody, oldMeta string
		want                        string // now, for every reader
	}{
		{"int32", `" 42"`, "ERR", "ERR", "42", "ERR"},
		{"int32", `"42 "`, "ERR", "ERR", "42", "ERR"},
		{"int32", `"1.5"`, "ERR", "ERR", "1", "ERR"},
		{"int32", `"7.0"`, "ERR", "ERR", "7", "7"},
		{"int32", `"1e3"`, "ERR", "ERR", "1000", "ERR"},
		{"int32", `"0x1p4"`, "ERR", "ERR", "16", "ERR"},
		{"int64", `"2147483648.5"`, "-", "ERR", "2147483648", "ERR"},
		{"bool", `1.0`, "-", "true", "ERR", "true"},
		{"bool", `0.5`, "-", "false", "ERR", "false"},
		{"bool", `-0`, "-", "false", "ERR", "false"},
		{"bool", `1e0`, "-", "true", "ERR", "true"},
		{"string", `{"a": 1}`, `"{\"a\": 1}"`, `"{\"a\": 1}"`, "ERR", `"{\"a\": 1}"`},
		{"string", `[1, "x"]`, `"[1, \"x\"]"`, `"[1, \"x\"]"`, "ERR", `"[1, \"x\"]"`},
		{"enum", `9.5`, "GO", "9.5", "-", "OTHER/9.5"},
		{"enum", `1e0`, "CPP", "1e0", "-", "OTHER/1e0"},
		{"enum", `"+1"`, "+1", "CPP", "-", "+1"},
		// Where they agreed, and still do.
		{"int32", `1.9`, "1", "1", "1", "1"},
		{"int32", `""`, "0", "0", "0", "0"},
		{"int32", `true`, "1", "1", "1", "1"},
		{"int32", `null`, "keep", "keep", "keep", "keep"},
		{"int32", `2147483648`, "ERR", "ERR", "ERR", "ERR"},
		{"int32", `{}`, "ERR", "ERR", "ERR", "ERR"},
		{"bool", `"Y"`, "-", "true", "true", "true"},
		{"bool", `""`, "-", "false", "false", "false"},
		{"bool", `2`, "-", "ERR", "ERR", "ERR"},
		{"string", `1.50`, `"1.50"`, `"1.50"`, `"1.50"`, `"1.50"`},
		{"string", `null`, "keep", "keep", "keep", "keep"},
		{"enum", `9`, "GO", "GO", "-", "GO"},
		{"enum", `300`, "OTHER", "300", "-", "OTHER/300"},
		{"double", `"2.5"`, "-", "2.5", "-", "2.5"},
		{"double", `true`, "-", "ERR", "-", "ERR"},
	}
	for _, tt := range tests {
		for reader, got := range readings(tt.kind, []byte(tt.in)) {
			want := tt.want
			if a, b, ok := cut(want); ok { // "header/body" for the enum
				want = map[bool]string{true: a, false: b}[reader == "header"]
			}
			if got != want {
				t.Errorf("%s %s: %s reads %s, want %s", tt.kind, tt.in, reader, got, want)
			}
		}
	}
}

// cut splits "a/b" (not inside quotes).
func cut(s string) (string, string, bool) {
	if len(s) == 0 || s[0] == '"' {
		return s, "", false
	}
	for i := range len(s) {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// FuzzReadersAgree feeds one JSON value to every reader of every kind:
// they must all read it the same way (the header's language excepted where
// it reads OTHER, see TestReadersAgree).
func FuzzReadersAgree(f *testing.F) {
	for _, s := range []string{`1`, `-0`, `1.9`, `1e3`, `"42"`, `""`, `" 1"`, `"7.0"`, `"1.5"`, `true`, `false`,
		`null`, `{"a":[1,{"b":null}]}`, `[]`, `"Y"`, `"\u0031"`, `2147483648`, `9223372036854775808`, `1e400`,
		`"x\ud800"`, "\"\xff\"", "[\"\xff\"]", `9`, `13`, `14`, `"GO"`, ` 5 `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		v := bytes.TrimSpace(in) // the Parse functions take the value itself, as encoding/json hands it over
		for _, kind := range []string{"int32", "int64", "bool", "string", "double"} {
			r := readings(kind, v)
			for reader, got := range r {
				if want := r["parse"]; got != want {
					t.Fatalf("%s %q: %s reads %s, lenient.Parse reads %s (all: %v)", kind, in, reader, got, want, r)
				}
			}
		}
		// Enum: the header's language and a body enum share the ordinal
		// rule (lenient.EnumOrdinal); they differ in what else they do.
		r := readings("enum", v)
		h, b := r["header"], r["body"]
		var wantH, wantB string
		switch i, ordinal := lenient.EnumOrdinal(v, len(languages)); {
		case v[0] == 'n':
			wantH, wantB = "keep", "keep"
		case v[0] == '"': // a name; a body cannot tell digits in quotes from a number
			var name string
			if err := json.Unmarshal(v, &name); err != nil {
				t.Fatal(err)
			}
			wantH, wantB = name, lenient.Enum(lenient.String(name), languages)
		case ordinal:
			wantH, wantB = languages[i], languages[i]
		case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
			wantH, wantB = "OTHER", lenient.Text(v) // no ordinal of the table
		default: // true, false, an object or an array: no enum in a header
			wantH, wantB = "ERR", lenient.Text(v)
		}
		if h != wantH || b != wantB {
			t.Fatalf("enum %q: header reads %s (want %s), body %s (want %s)", in, h, wantH, b, wantB)
		}
	})
}
