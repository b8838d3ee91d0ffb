package remoting

import (
	"bytes"
	"fmt"
	"maps"
)

// sameCommand reports whether a and b carry the same command, treating
// nil and empty ExtFields and Body as equal. It returns a description of
// the first difference, or "".
func sameCommand(a, b *Command) string {
	switch {
	case a.Code != b.Code:
		return fmt.Sprintf("code %d != %d", a.Code, b.Code)
	case a.Language != b.Language:
		return fmt.Sprintf("language %q != %q", a.Language, b.Language)
	case a.Version != b.Version:
		return fmt.Sprintf("version %d != %d", a.Version, b.Version)
	case a.Opaque != b.Opaque:
		return fmt.Sprintf("opaque %d != %d", a.Opaque, b.Opaque)
	case a.Flag != b.Flag:
		return fmt.Sprintf("flag %d != %d", a.Flag, b.Flag)
	case a.Remark != b.Remark:
		return fmt.Sprintf("remark %q != %q", a.Remark, b.Remark)
	case !maps.Equal(a.ExtFields, b.ExtFields):
		return fmt.Sprintf("extFields %v != %v", a.ExtFields, b.ExtFields)
	case !bytes.Equal(a.Body, b.Body):
		return fmt.Sprintf("body %q != %q", a.Body, b.Body)
	case a.Serialize != b.Serialize:
		return fmt.Sprintf("serialize %v != %v", a.Serialize, b.Serialize)
	}
	return ""
}

// frameOf builds a frame from its parts without the encoder: total length,
// header word, header, body.
func frameOf(st SerializeType, header, body []byte) []byte {
	out := make([]byte, 8, 8+len(header)+len(body))
	n := 4 + len(header) + len(body)
	out[0], out[1], out[2], out[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	h := len(header)
	out[4], out[5], out[6], out[7] = byte(st), byte(h>>16), byte(h>>8), byte(h)
	out = append(out, header...)
	return append(out, body...)
}
