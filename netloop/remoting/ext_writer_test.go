package remoting

import (
	"bytes"
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"
)

// extField is one field for extList.
type extField struct {
	key   string
	value string
	kind  byte // 's' String, 'b' Bytes, 'i' Int (value is its decimal text)
}

// extList writes its fields in order.
type extList []extField

func (l extList) WriteExt(e *ExtEncoder) {
	for _, f := range l {
		switch f.kind {
		case 'b':
			e.Bytes(f.key, []byte(f.value))
		case 'i':
			v, err := strconv.ParseInt(f.value, 10, 64)
			if err != nil {
				panic(err)
			}
			e.Int(f.key, v)
		default:
			e.String(f.key, f.value)
		}
	}
}

// TestExtWriterMatchesMap checks that a command whose fields come from an
// ExtWriter (keys in sorted order) encodes to the same bytes as the same
// command with an ExtFields map, in both header encodings, and decodes to
// the same fields.
func TestExtWriterMatchesMap(t *testing.T) {
	tests := []struct {
		name   string
		fields extList
	}{
		{"none", nil},
		{"send header", extList{
			{"a", "PG", 's'}, {"b", "orders", 's'}, {"c", "TBW102", 's'}, {"d", "4", 's'}, {"e", "7", 'i'},
			{"f", "0", 'i'}, {"g", "1735000000000", 'i'}, {"h", "-3", 'i'},
			{"i", "KEYS\x01k1\x02UNIQ_KEY\x010A000001\x02WAIT\x01true\x02", 'b'},
			{"j", "0", 's'}, {"k", "false", 's'}, {"m", "false", 's'}, {"n", "broker-a", 's'},
		}},
		{"escapes and unicode", extList{
			{"q\"uote", "back\\slash\ttab\nnl\rcr\x01ctl", 's'}, {"r", "héllo 世界", 'b'},
			{"s", "bad \xff utf8", 'b'}, {"t", "bad \xfe utf8", 's'}, {"u", "", 's'}, {"v", "", 'b'},
		}},
		{"extremes", extList{{"max", "9223372036854775807", 'i'}, {"min", "-9223372036854775808", 'i'}}},
	}
	for _, tt := range tests {
		for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			t.Run(tt.name+"/"+st.String(), func(t *testing.T) {
				m := map[string]string{}
				for _, f := range tt.fields {
					m[f.key] = f.value
				}
				base := Command{Code: SendMessageV2, Language: "GO", Version: 479, Opaque: 42, Remark: "r", Body: []byte("body"), Serialize: st}
				withMap, withExt := base, base
				withMap.ExtFields = m
				withExt.Ext = tt.fields
				want, err := EncodeFrame(&withMap)
				if err != nil {
					t.Fatal(err)
				}
				got, err := EncodeFrame(&withExt)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("ExtWriter frame differs from the map's:\n got %q\nwant %q", got, want)
				}
				dec, err := DecodeFrame(got[4:])
				if err != nil {
					t.Fatal(err)
				}
				wantFields := m
				if st == SerializeJSON { // invalid UTF-8 comes back as U+FFFD
					wantFields = maps.Clone(m)
					for k, v := range wantFields {
						wantFields[k] = strings.ToValidUTF8(v, "\uFFFD")
					}
				}
				if !maps.Equal(dec.ExtFields, wantFields) {
					t.Fatalf("decoded fields %q, want %q", dec.ExtFields, wantFields)
				}
			})
		}
	}
}

// TestExtWriterLongKey checks that a key too long for the binary layout
// fails the encoding and leaves the buffer as it was.
func TestExtWriterLongKey(t *testing.T) {
	c := &Command{Code: 10, Language: "GO", Serialize: SerializeRocketMQ,
		Ext: extList{{"ok", "1", 's'}, {strings.Repeat("k", 1<<15), "v", 's'}, {"after", "x", 's'}}}
	dst := []byte("prefix")
	out, err := AppendFrame(dst, c)
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
	if string(out) != "prefix" {
		t.Fatalf("buffer after a failed encode: %q", out)
	}
	c.Serialize = SerializeJSON // no width limit in JSON
	if _, err := EncodeFrame(c); err != nil {
		t.Fatalf("JSON: %v", err)
	}
}

// benchExt is the ExtWriter of BenchmarkEncodeExtWriter.
type benchExt struct{ props []byte }

func (x *benchExt) WriteExt(e *ExtEncoder) {
	e.String("a", "PG")
	e.Int("e", 7)
	e.Int("g", 1735000000000)
	e.Bytes("i", x.props)
}

// BenchmarkEncodeExtWriter encodes a send request from an ExtWriter into a
// reused buffer: it should not allocate.
func BenchmarkEncodeExtWriter(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run(st.String(), func(b *testing.B) {
			c := &Command{Code: SendMessageV2, Language: "GO", Version: 479, Serialize: st, Body: make([]byte, 256),
				Ext: &benchExt{props: []byte("UNIQ_KEY\x010A000001\x02")}}
			buf := make([]byte, 0, 4096)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = AppendFrame(buf[:0], c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
