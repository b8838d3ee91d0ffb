package javaprops

import (
	"bytes"
	"reflect"
	"testing"
	"unicode/utf8"
)

func TestEncode(t *testing.T) {
	cases := []struct {
		name string
		in   map[string]string
		want string
	}{
		{"empty", map[string]string{}, ""},
		{"sorted like a TreeMap", map[string]string{"brokerName": "broker-a", "autoCreateTopicEnable": "true", "Z": "1"},
			"Z=1\nautoCreateTopicEnable=true\nbrokerName=broker-a\n"},
		// RocketMQ writes these values raw; so does Encode.
		{"separators in values stay", map[string]string{"namesrvAddr": "127.0.0.1:9876;127.0.0.2:9876", "a": "x=y#z!"},
			"a=x=y#z!\nnamesrvAddr=127.0.0.1:9876;127.0.0.2:9876\n"},
		{"empty value", map[string]string{"k": ""}, "k=\n"},
		{"inner and trailing blanks stay", map[string]string{"k": "a b  "}, "k=a b  \n"},
		{"leading blanks escaped", map[string]string{"k": "  a"}, "k=\\ \\ a\n"},
		{"line breaks and backslash", map[string]string{"k": "a\nb\r\\c\td\f"}, `k=a\nb\r\\c\td\f` + "\n"},
		{"key separators", map[string]string{"a=b:c d#e!f": "1", "#k": "2"}, `\#k=2` + "\n" + `a\=b\:c\ d\#e\!f=1` + "\n"},
		{"non-ASCII as escapes", map[string]string{"k": "é\x01\x7f😀"}, `k=\u00e9\u0001\u007f\ud83d\ude00` + "\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := string(Encode(c.in))
			if got != c.want {
				t.Fatalf("got %q\nwant %q", got, c.want)
			}
			back := map[string]string{}
			entries, err := Parse([]byte(got))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				back[e.Key] = e.Value
			}
			if !reflect.DeepEqual(back, c.in) {
				t.Fatalf("read back %q, want %q", back, c.in)
			}
		})
	}
}

// TestParseJavaUpdateBody reads an UPDATE_BROKER_CONFIG body as
// MixAll.properties2String writes it (raw "key=value" lines, unsorted,
// nothing escaped).
func TestParseJavaUpdateBody(t *testing.T) {
	entries, err := Parse([]byte("fileReservedTime=48\nmaxMessageSize=8388608\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"fileReservedTime", "48", 1}, {"maxMessageSize", "8388608", 2}}
	if !reflect.DeepEqual(entries, want) {
		t.Fatalf("got %+v, want %+v", entries, want)
	}
}

// FuzzEncode checks that any key and value survive Encode then Parse, and
// that Encode writes one printable-ASCII line per entry.
func FuzzEncode(f *testing.F) {
	for _, kv := range [][2]string{
		{"a", "1"}, {"", ""}, {" k ", " v "}, {"a=b", "c:d"}, {"#", "!"}, {"k", "\\"}, {"k", "x\\\n y"},
		{"é", "😀"}, {"k", "\r\n\t\f"}, {"\\u0041", "\\uZZZZ"},
	} {
		f.Add(kv[0], kv[1])
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			t.Skip("Encode writes invalid UTF-8 as U+FFFD")
		}
		out := Encode(map[string]string{k: v})
		for _, c := range out[:len(out)-1] {
			if c < 0x20 || c > 0x7e {
				t.Fatalf("byte %#x in %q", c, out)
			}
		}
		if bytes.Count(out, []byte("\n")) != 1 || out[len(out)-1] != '\n' {
			t.Fatalf("not one line: %q", out)
		}
		back, err := Parse(out)
		if err != nil || len(back) != 1 || back[0].Key != k || back[0].Value != v {
			t.Fatalf("%q=%q encoded %q read back %+v %v", k, v, out, back, err)
		}
	})
}
