package javaprops

import (
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []Entry
	}{
		{"equals", "a=1", []Entry{{"a", "1", 1}}},
		{"spaced equals", "  a = 1", []Entry{{"a", "1", 1}}},
		{"colon", "a: 1", []Entry{{"a", "1", 1}}},
		{"space only", "a 1", []Entry{{"a", "1", 1}}},
		{"space then colon", "a\t : \t1", []Entry{{"a", "1", 1}}},
		{"second separator is value", "a==1", []Entry{{"a", "=1", 1}}},
		{"no value", "a", []Entry{{"a", "", 1}}},
		{"empty value", "a=", []Entry{{"a", "", 1}}},
		{"trailing blanks kept", "a=1  ", []Entry{{"a", "1  ", 1}}},
		{"comments and blank lines", "# c\n! c\n\n   \n  # c\nb=2\n", []Entry{{"b", "2", 6}}},
		{"hash inside value", "a=x#y", []Entry{{"a", "x#y", 1}}},
		{"CRLF and CR", "a=1\r\nb=2\rc=3", []Entry{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"continuation", "a=one \\\n    two\\\n three\nb=2", []Entry{{"a", "one twothree", 1}, {"b", "2", 4}}},
		{"even backslashes do not continue", "a=x\\\\\nb=2", []Entry{{"a", `x\`, 1}, {"b", "2", 2}}},
		{"continued line starting with hash is value", "a=1\\\n#2", []Entry{{"a", "1#2", 1}}},
		{"comment line does not continue", "# c \\\nb=2", []Entry{{"b", "2", 2}}},
		{"continuation at EOF", "a=1\\", []Entry{{"a", "1", 1}}},
		{"escaped separators in key", `a\=b\:c\ d=1`, []Entry{{"a=b:c d", "1", 1}}},
		{"escapes", `a=\t\n\r\f\q\\`, []Entry{{"a", "\t\n\r\fq\\", 1}}},
		{"unicode escape", `a=\u00e9\u0041`, []Entry{{"a", "éA", 1}}},
		{"surrogate pair", `a=\uD83D\uDE00`, []Entry{{"a", "😀", 1}}},
		{"utf8 as is", "a=é", []Entry{{"a", "é", 1}}},
		{"duplicates kept in order", "a=1\na=2", []Entry{{"a", "1", 1}, {"a", "2", 2}}},
		{"broker.conf", "brokerClusterName = DefaultCluster\nbrokerName = broker-a\nbrokerId = 0\ndeleteWhen = 04\n" +
			"fileReservedTime = 48\nbrokerRole = ASYNC_MASTER\nflushDiskType = ASYNC_FLUSH\n",
			[]Entry{{"brokerClusterName", "DefaultCluster", 1}, {"brokerName", "broker-a", 2}, {"brokerId", "0", 3},
				{"deleteWhen", "04", 4}, {"fileReservedTime", "48", 5}, {"brokerRole", "ASYNC_MASTER", 6},
				{"flushDiskType", "ASYNC_FLUSH", 7}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		in   string
		line int
	}{
		{"a=1\nb=\\u12", 2},
		{"a=1\n\nb=\\uZZZZ", 3},
		{"\\u00G0=1", 1},
		{"a=\xff", 1},
		{"a=1\nb=2\n\n\n\nc=\xff", 6},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.in))
		var le *LineError
		if !errors.As(err, &le) || le.Line != c.line || !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: error %v, want a syntax error on line %d", c.in, err, c.line)
		}
	}
}

// FuzzParse checks that any input parses or fails cleanly, that
// keys and values are valid UTF-8, that lines are increasing, and that an
// entry written back by Encode reads the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"a=1", "a : 1\r\nb 2", "# c\n!c\na=1\\\n  2", `k\ey=\u0041\t\\`, "a=\\", "\\u", "=\n:\n \\\n",
		"brokerName = broker-a\nlistenPort=10911\nnamesrvAddr=127.0.0.1:9876;127.0.0.2:9876\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error not ErrSyntax: %v", err)
			}
			return
		}
		last := 0
		for _, e := range entries {
			if !utf8.ValidString(e.Key) || !utf8.ValidString(e.Value) {
				t.Fatalf("invalid UTF-8 in %+v", e)
			}
			if e.Line <= last {
				t.Fatalf("lines not increasing: %+v", entries)
			}
			last = e.Line
			back, err := Parse(Encode(map[string]string{e.Key: e.Value}))
			if err != nil || len(back) != 1 || back[0].Key != e.Key || back[0].Value != e.Value {
				t.Fatalf("round trip of %+v: %+v %v", e, back, err)
			}
		}
	})
}

// TestParseAll: every bad line is reported with its own number and the
// good lines around them are kept; a comment's bytes are not checked.
func TestParseAll(t *testing.T) {
	in := "a=1\n# caf\xe9 comment\nb=\\uZZZZ\nc=3\n\nd=caf\xe9\ne=one \\\n  tw\xff\nf=6\n"
	entries, errs := ParseAll([]byte(in))
	want := []Entry{{"a", "1", 1}, {"c", "3", 4}, {"f", "6", 9}}
	if !reflect.DeepEqual(entries, want) {
		t.Errorf("entries %+v, want %+v", entries, want)
	}
	var lines []int
	for _, e := range errs {
		if !errors.Is(e, ErrSyntax) {
			t.Errorf("%v is not a syntax error", e)
		}
		lines = append(lines, e.Line)
	}
	if !reflect.DeepEqual(lines, []int{3, 6, 8}) {
		t.Fatalf("errors %v on lines %v, want 3, 6, 8", errs, lines)
	}
	if got := errs[1].Error(); got != "line 6: not UTF-8 text (a byte 0xe9 at column 6): javaprops: syntax error" {
		t.Errorf("message %q", got)
	}
	first, err := Parse([]byte(in))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || !reflect.DeepEqual(first, want[:1]) {
		t.Errorf("Parse: %+v %v, want the entries before line 3 and its error", first, err)
	}
}
