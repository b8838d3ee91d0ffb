package lenient

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{`"abc"`, "abc"},
		{`"a\u0001b"`, "a\x01b"},
		{`""`, ""},
		{`null`, "kept"},
		{`2598942`, "2598942"},
		{`-1.5e3`, "-1.5e3"},
		{`true`, "true"},
		{`false`, "false"},
		{`{"a":1}`, `{"a":1}`},
		{`[1,"x"]`, `[1,"x"]`},
		{"[\"\xff\"]", "[\"\ufffd\"]"},
	}
	for _, tc := range tests {
		s := String("kept")
		if err := json.Unmarshal([]byte(tc.in), &s); err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if string(s) != tc.want {
			t.Errorf("%s: got %q, want %q", tc.in, s, tc.want)
		}
	}
}

func TestInt(t *testing.T) {
	tests := []struct {
		in      string
		want32  int64 // -99 = error
		want64  int64
		comment string
	}{
		{`7`, 7, 7, "number"},
		{`-7`, -7, -7, "negative"},
		{`"42"`, 42, 42, "string"},
		{`""`, 0, 0, "empty string is 0"},
		{`null`, 5, 5, "null keeps the value"},
		{`true`, 1, 1, "true is 1"},
		{`false`, 0, 0, "false is 0"},
		{`1.9`, 1, 1, "fraction dropped"},
		{`-1.9`, -1, -1, "toward zero"},
		{`1e3`, 1000, 1000, "exponent"},
		{`2147483648`, -99, 2147483648, "beyond int32"},
		{`"2147483648"`, -99, 2147483648, "string beyond int32"},
		{`1700000000000000000`, -99, 1700000000000000000, "Go subVersion in ns"},
		{`9223372036854775808`, -99, -99, "beyond int64"},
		{`1e400`, -99, -99, "beyond float64"},
		{`"abc"`, -99, -99, "not a number"},
		{`"1.5"`, -99, -99, "string with fraction"},
		{`"7.0"`, 7, 7, "string with a zero fraction (castToInt)"},
		{`"7."`, 7, 7, "string with an empty fraction"},
		{`"-7.000"`, -7, -7, "negative with zeros"},
		{`"7.01"`, -99, -99, "string with a non-zero fraction"},
		{`".0"`, -99, -99, "only a fraction"},
		{`"-.0"`, -99, -99, "sign and a fraction"},
		{`"7.0.0"`, -99, -99, "two dots"},
		{`" 7"`, -99, -99, "white space"},
		{`"1e3"`, -99, -99, "string with an exponent"},
		{`"0x10"`, -99, -99, "hexadecimal"},
		{`"1,000"`, -99, -99, "commas"},
		{`"+5"`, 5, 5, "plus sign"},
		{`-0`, 0, 0, "negative zero"},
		{`1e-400`, 0, 0, "underflow"},
		{`2147483647.9`, 2147483647, 2147483647, "fraction at the int32 limit"},
		{`-2147483648.9`, -2147483648, -2147483648, "fraction at the int32 minimum"},
		{`{}`, -99, -99, "object"},
		{`[1]`, -99, -99, "array"},
	}
	for _, tc := range tests {
		n32 := Int32(5)
		err := json.Unmarshal([]byte(tc.in), &n32)
		if (err != nil) != (tc.want32 == -99) || (err == nil && int64(n32) != tc.want32) {
			t.Errorf("Int32 %s (%s): got %d, %v; want %d", tc.in, tc.comment, n32, err, tc.want32)
		}
		n64 := Int64(5)
		err = json.Unmarshal([]byte(tc.in), &n64)
		if (err != nil) != (tc.want64 == -99) || (err == nil && int64(n64) != tc.want64) {
			t.Errorf("Int64 %s (%s): got %d, %v; want %d", tc.in, tc.comment, n64, err, tc.want64)
		}
	}
}

func TestBool(t *testing.T) {
	tests := []struct {
		in      string
		want    bool
		wantErr bool
	}{
		{`true`, true, false}, {`false`, false, false}, {`null`, true, false},
		{`"true"`, true, false}, {`"TRUE"`, true, false}, {`"false"`, false, false}, {`""`, false, false},
		{`"1"`, true, false}, {`"0"`, false, false}, {`"Y"`, true, false}, {`"N"`, false, false},
		{`1`, true, false}, {`0`, false, false}, {`1.0`, true, false}, {`0.5`, false, false}, {`-0`, false, false},
		{`1.9`, true, false}, {`1e0`, true, false}, {`-1`, false, true}, {`"T"`, true, false}, {`"F"`, false, false},
		{`"t"`, false, true}, {`" true"`, false, true},
		{`2`, false, true}, {`"yes"`, false, true}, {`{}`, false, true}, {`[]`, false, true},
	}
	for _, tc := range tests {
		v := Bool(true)
		err := json.Unmarshal([]byte(tc.in), &v)
		if (err != nil) != tc.wantErr || (err == nil && bool(v) != tc.want) {
			t.Errorf("Bool %s: got %v, %v; want %v (error %v)", tc.in, v, err, tc.want, tc.wantErr)
		}
	}
}

func TestEnum(t *testing.T) {
	names := []string{"BROADCASTING", "CLUSTERING"}
	for in, want := range map[String]string{"1": "CLUSTERING", "0": "BROADCASTING", "2": "2", "-1": "-1",
		"-0": "BROADCASTING", "1.0": "1.0", "1e0": "1e0", "+1": "+1", "01": "01",
		"CLUSTERING": "CLUSTERING", "": ""} {
		if got := Enum(in, names); got != want {
			t.Errorf("Enum(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzValues feeds arbitrary JSON to every type: no panic, and the results
// agree with one another where the rules overlap.
func FuzzValues(f *testing.F) {
	for _, s := range []string{`1`, `"1"`, `-0`, `1.5`, `1e18`, `"x"`, `true`, `null`, `{"a":[1]}`, `""`,
		`9223372036854775807`, `-9223372036854775808`, `2147483647.9`, `"\u0031"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		var s String
		if err := json.Unmarshal(in, &s); err != nil {
			t.Fatalf("String refused valid JSON %q: %v", in, err)
		}
		var n32 Int32
		err32 := json.Unmarshal(in, &n32)
		var n64 Int64
		err64 := json.Unmarshal(in, &n64)
		if err32 == nil && (err64 != nil || int64(n32) != int64(n64)) {
			t.Fatalf("%q: Int32 %d but Int64 %d, %v", in, n32, n64, err64)
		}
		if err64 == nil && n64 >= math.MinInt32 && n64 <= math.MaxInt32 && err32 != nil {
			t.Fatalf("%q: Int64 %d fits int32 but Int32 failed: %v", in, n64, err32)
		}
		// A decimal integer read as String reads back as the same number.
		if v, err := strconv.ParseInt(string(s), 10, 64); err == nil && err64 == nil && in[0] != '"' && v != int64(n64) {
			t.Fatalf("%q: String %q but Int64 %d", in, s, n64)
		}
		var b Bool
		_ = json.Unmarshal(in, &b)
	})
}
