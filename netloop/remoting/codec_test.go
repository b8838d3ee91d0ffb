package remoting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte{0xab}, 1<<20)
	cmds := []*Command{
		{Code: 10, Language: "GO", Version: 317, Opaque: 1, ExtFields: map[string]string{}},
		{Code: -1, Language: "JAVA", Version: -5, Opaque: -7, Flag: 3, Remark: "ünïcode ✓"},
		{Code: 11, Language: "GO", Version: 479, Opaque: 1 << 30, Flag: FlagResponse,
			ExtFields: map[string]string{"": "", "a": "", "ctl\x00\x1f": "q\"b\\s/"}, Body: big},
		{Code: 310, Language: "RUST", Version: 479, Opaque: 2, ExtFields: map[string]string{"a": "1", "b": "2", "c": "3"}, Body: []byte{0}},
	}
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		for i, c := range cmds {
			c.Serialize = st
			frame, err := EncodeFrame(c)
			if err != nil {
				t.Fatalf("%v #%d: EncodeFrame: %v", st, i, err)
			}
			if got := int(binary.BigEndian.Uint32(frame)); got != len(frame)-4 {
				t.Fatalf("%v #%d: length field %d, want %d", st, i, got, len(frame)-4)
			}
			if frame[4] != byte(st) {
				t.Fatalf("%v #%d: type byte %d", st, i, frame[4])
			}
			got, err := DecodeFrame(frame[4:])
			if err != nil {
				t.Fatalf("%v #%d: DecodeFrame: %v", st, i, err)
			}
			if d := sameCommand(got, c); d != "" {
				t.Fatalf("%v #%d: %s", st, i, d)
			}
			// The body must not alias the input buffer.
			if len(got.Body) > 0 {
				frame[len(frame)-1] ^= 0xff
				if got.Body[len(got.Body)-1] == frame[len(frame)-1] {
					t.Fatalf("%v #%d: body aliases the frame buffer", st, i)
				}
			}
		}
	}
}

func TestAppendFrameKeepsPrefix(t *testing.T) {
	prefix := []byte("prefix")
	c := NewRequest(HeartBeat, map[string]string{"k": "v"}, []byte("x"))
	out, err := AppendFrame(append([]byte(nil), prefix...), c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, prefix) {
		t.Fatalf("prefix lost: %q", out[:10])
	}
	alone, _ := EncodeFrame(c)
	if !bytes.Equal(out[len(prefix):], alone) {
		t.Fatalf("AppendFrame differs from EncodeFrame")
	}
	// On error the destination comes back unchanged.
	bad := &Command{Code: 1 << 20, Serialize: SerializeRocketMQ}
	out2, err := AppendFrame(out, bad)
	if !errors.Is(err, ErrMalformed) || len(out2) != len(out) {
		t.Fatalf("got len %d err %v, want len %d and ErrMalformed", len(out2), err, len(out))
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name string
		cmd  *Command
		want error
	}{
		{"unknown serialize type", &Command{Serialize: 2}, ErrMalformed},
		{"binary code too big", &Command{Code: 40000, Serialize: SerializeRocketMQ}, ErrMalformed},
		{"binary code too small", &Command{Code: -40000, Serialize: SerializeRocketMQ}, ErrMalformed},
		{"binary version too big", &Command{Version: 1 << 16, Serialize: SerializeRocketMQ}, ErrMalformed},
		{"binary key too long", &Command{ExtFields: map[string]string{strings.Repeat("k", 1<<15): "v"}, Serialize: SerializeRocketMQ}, ErrMalformed},
		{"header beyond 24 bits", &Command{Remark: strings.Repeat("r", 1<<24), Serialize: SerializeRocketMQ}, ErrFrameTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := EncodeFrame(tc.cmd); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDecodeFrameErrors(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte // after the length field
	}{
		{"empty", nil},
		{"short header word", []byte{0, 0, 0}},
		{"header longer than frame", mustHex("00000010 7b7d")},
		{"serialize type 2", mustHex("02000002 7b7d")},
		{"serialize type 0xff", mustHex("ff000000")},
		{"json empty header", mustHex("00000000")},
		{"json null", append(mustHex("00000004"), "null"...)},
		{"json array", append(mustHex("00000002"), "[]"...)},
		{"json truncated", append(mustHex("00000009"), `{"code":1`...)},
		{"json trailing garbage", append(mustHex("00000003"), `{}x`...)},
		{"json code as non-numeric string", append(mustHex("0000000e"), `{"code":"abc"}`...)},
		{"json code overflow", append(mustHex("00000013"), `{"code":4294967296}`...)},
		{"json opaque overflow as string", append(mustHex("00000017"), `{"opaque":"4294967295"}`...)},
		{"json code object", append(mustHex("0000000b"), `{"code":{}}`...)},
		{"json ext not an object", append(mustHex("00000011"), `{"extFields":"x"}`...)},
		{"json ext value bad literal", append(mustHex("00000017"), `{"extFields":{"a":tru}}`...)},
		{"binary short", mustHex("01000003 000a09")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeFrame(tc.frame)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %+v, %v; want ErrMalformed", c, err)
			}
		})
	}
}

func TestDecodeFrameSetsSerializeAndBody(t *testing.T) {
	hdr := []byte(`{"code":1}`)
	frame := frameOf(SerializeJSON, hdr, []byte("body"))
	c, err := DecodeFrame(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	if c.Serialize != SerializeJSON || string(c.Body) != "body" || c.Code != 1 {
		t.Fatalf("got %+v", c)
	}
	if c.ExtFields == nil {
		t.Fatal("ExtFields is nil")
	}
	// No body decodes as nil.
	frame = frameOf(SerializeJSON, hdr, nil)
	if c, _ = DecodeFrame(frame[4:]); c.Body != nil {
		t.Fatalf("body %v, want nil", c.Body)
	}
}

func TestReadFrame(t *testing.T) {
	good, _ := EncodeFrame(NewRequest(PullMessage, map[string]string{"topic": "T"}, []byte("abc")))
	tests := []struct {
		name     string
		in       []byte
		maxFrame int
		want     error // nil: success
	}{
		{"ok", good, 0, nil},
		{"ok exact limit", good, len(good) - 4, nil},
		{"too large", good, len(good) - 5, ErrFrameTooLarge},
		{"negative length", mustHex("ffffffff"), 0, ErrMalformed},
		{"length below header word", mustHex("00000003 000000"), 0, ErrMalformed},
		{"clean EOF", nil, 0, io.EOF},
		{"cut in length", good[:2], 0, io.ErrUnexpectedEOF},
		{"cut in frame", good[:len(good)-1], 0, io.ErrUnexpectedEOF},
		{"bad header", frameOf(SerializeJSON, []byte("{"), nil), 0, ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ReadFrame(bytes.NewReader(tc.in), tc.maxFrame)
			if tc.want == nil {
				if err != nil || c.Code != PullMessage || string(c.Body) != "abc" {
					t.Fatalf("got %+v, %v", c, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

func TestReadFrameSequence(t *testing.T) {
	var stream []byte
	for i := range 5 {
		c := NewRequest(SendMessage, nil, bytes.Repeat([]byte{byte(i)}, i*100))
		c.Opaque = int32(i)
		if i%2 == 1 {
			c.Serialize = SerializeRocketMQ
		}
		var err error
		if stream, err = AppendFrame(stream, c); err != nil {
			t.Fatal(err)
		}
	}
	r := bytes.NewReader(stream)
	for i := range 5 {
		c, err := ReadFrame(r, 0)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if c.Opaque != int32(i) || len(c.Body) != i*100 || c.Serialize != SerializeType(i%2) {
			t.Fatalf("frame %d: got opaque %d body %d serialize %v", i, c.Opaque, len(c.Body), c.Serialize)
		}
	}
	if _, err := ReadFrame(r, 0); !errors.Is(err, io.EOF) {
		t.Fatalf("after last frame: %v, want io.EOF", err)
	}
}
