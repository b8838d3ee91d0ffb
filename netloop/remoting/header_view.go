package remoting

import (
	"encoding/binary"
	"fmt"
)

// HeaderView reads a frame's header in place, without building a Command:
// the fixed fields are decoded, the extFields are kept as byte ranges of the
// frame (or, for JSON strings with escapes, of a buffer the view reuses).
// It serves hot paths that answer a request from a few header fields and
// would otherwise allocate a Command, a map and its strings per frame.
//
// It accepts only the plain shape real clients send: for JSON, extFields a
// single object of string values, remark a string or null, language a
// string, number or null; for ROCKETMQ binary headers anything
// DecodeFrame accepts. Anything else (and anything malformed) makes Parse
// fail with ErrNotPlain or ErrMalformed, and the caller decodes the frame
// with DecodeFrame instead, which has the full lenient rules and the error
// messages. Whenever Parse succeeds, DecodeFrame of the same frame succeeds
// and yields the same code, version, opaque, flag, serialize type, body
// and extFields (FuzzHeaderView holds the two to that).
//
// A HeaderView is reused from frame to frame by one goroutine; what its
// methods return aliases the frame or the view and is valid until the next
// Parse.
type HeaderView struct {
	Code      int32
	Version   int32
	Opaque    int32
	Flag      int32
	Serialize SerializeType
	// Body aliases the frame.
	Body []byte

	frame  []byte
	fields []viewField
	store  []byte // unescaped JSON strings
	unesc  []byte // the scanner's scratch
}

// viewField is one extFields entry: key and value as ranges.
type viewField struct{ k, v viewSpan }

// viewSpan is a byte range of the header (inStore false) or of the view's
// store.
type viewSpan struct {
	off, n  int
	inStore bool
}

// ErrNotPlain is returned by HeaderView.Parse for a valid header outside
// the shape the view reads; decode the frame with DecodeFrame.
var ErrNotPlain = fmt.Errorf("remoting: header is not in the plain shape: decode it fully")

// Parse reads frame (everything after the 4-byte total length, as in
// DecodeFrame). The view aliases frame until the next Parse.
func (v *HeaderView) Parse(frame []byte) error {
	v.Code, v.Version, v.Opaque, v.Flag, v.Body = 0, 0, 0, 0, nil
	v.fields, v.store, v.frame = v.fields[:0], v.store[:0], nil
	if len(frame) < headerWordSize {
		return ErrMalformed
	}
	word := binary.BigEndian.Uint32(frame)
	st := SerializeType(word >> 24)
	h := int(word & maxHeaderLen)
	if h > len(frame)-headerWordSize {
		return ErrMalformed
	}
	header := frame[headerWordSize : headerWordSize+h]
	v.frame = header
	var err error
	switch st {
	case SerializeJSON:
		err = v.parseJSON(header)
	case SerializeRocketMQ:
		err = v.parseBinary(header)
	default:
		return ErrMalformed
	}
	if err != nil {
		v.fields = v.fields[:0]
		return err
	}
	v.Serialize = st
	if body := frame[headerWordSize+h:]; len(body) > 0 {
		v.Body = body
	}
	return nil
}

// IsResponse reports whether the frame is a response.
func (v *HeaderView) IsResponse() bool { return v.Flag&FlagResponse != 0 }

// IsOneway reports whether the frame is a request that wants no answer.
func (v *HeaderView) IsOneway() bool { return v.Flag&FlagOneway != 0 }

// Field returns the value of an extFields key (the last occurrence, as a
// decoded map keeps it). The value aliases the frame or the view.
func (v *HeaderView) Field(key string) ([]byte, bool) {
	for i := len(v.fields) - 1; i >= 0; i-- {
		f := &v.fields[i]
		if string(v.bytes(f.k)) == key {
			return v.bytes(f.v), true
		}
	}
	return nil, false
}

// Fields calls fn for every extFields entry in arrival order (a key may
// come more than once; the last one counts).
func (v *HeaderView) Fields(fn func(key, value []byte)) {
	for _, f := range v.fields {
		fn(v.bytes(f.k), v.bytes(f.v))
	}
}

// NumFields is the number of extFields entries (a repeated key counts
// each time).
func (v *HeaderView) NumFields() int { return len(v.fields) }

// FieldAt returns entry i (0 <= i < NumFields) in arrival order.
func (v *HeaderView) FieldAt(i int) (key, value []byte) {
	f := &v.fields[i]
	return v.bytes(f.k), v.bytes(f.v)
}

func (v *HeaderView) bytes(s viewSpan) []byte {
	if s.inStore {
		return v.store[s.off : s.off+s.n : s.off+s.n]
	}
	return v.frame[s.off : s.off+s.n : s.off+s.n]
}

// parseBinary reads a ROCKETMQ binary header (see decodeBinaryHeader).
func (v *HeaderView) parseBinary(h []byte) error {
	if len(h) < binaryFixedLen {
		return ErrMalformed
	}
	v.Code = int32(int16(binary.BigEndian.Uint16(h[0:])))
	v.Version = int32(int16(binary.BigEndian.Uint16(h[3:])))
	v.Opaque = int32(binary.BigEndian.Uint32(h[5:]))
	v.Flag = int32(binary.BigEndian.Uint32(h[9:]))
	p := 13
	remarkLen := int64(int32(binary.BigEndian.Uint32(h[p:])))
	p += 4
	if remarkLen < 0 || remarkLen > int64(len(h)-p-4) {
		return ErrMalformed
	}
	p += int(remarkLen)
	extLen := int64(int32(binary.BigEndian.Uint32(h[p:])))
	p += 4
	if extLen != int64(len(h)-p) {
		return ErrMalformed
	}
	for p < len(h) {
		if len(h)-p < 2 {
			return ErrMalformed
		}
		kl := int(int16(binary.BigEndian.Uint16(h[p:])))
		p += 2
		if kl < 0 || kl+4 > len(h)-p {
			return ErrMalformed
		}
		k := viewSpan{off: p, n: kl}
		p += kl
		vl := int64(int32(binary.BigEndian.Uint32(h[p:])))
		p += 4
		if vl < 0 || vl > int64(len(h)-p) {
			return ErrMalformed
		}
		v.fields = append(v.fields, viewField{k: k, v: viewSpan{off: p, n: int(vl)}})
		p += int(vl)
	}
	return nil
}

// parseJSON reads a JSON header in the plain shape.
func (v *HeaderView) parseJSON(h []byte) error {
	s := jsonScanner{b: h, scratch: v.unesc}
	defer func() { v.unesc = s.scratch[:0] }()
	if !s.consume('{') {
		return ErrMalformed
	}
	if s.consume('}') {
		return v.jsonEnd(&s)
	}
	for {
		key, err := s.stringBytes()
		if err != nil || !s.consume(':') {
			return ErrMalformed
		}
		switch jsonFieldOf(key) {
		case jsonFieldCode:
			err = s.int32Value(&v.Code)
		case jsonFieldVersion:
			err = s.int32Value(&v.Version)
		case jsonFieldOpaque:
			err = s.int32Value(&v.Opaque)
		case jsonFieldFlag:
			err = s.int32Value(&v.Flag)
		case jsonFieldLanguage:
			err = v.jsonLanguage(&s)
		case jsonFieldRemark:
			err = v.jsonRemark(&s)
		case jsonFieldExtFields:
			err = v.jsonExtFields(&s)
		default:
			err = s.skip(1)
		}
		if err != nil {
			if err == ErrNotPlain {
				return err
			}
			return ErrMalformed
		}
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			return v.jsonEnd(&s)
		}
		return ErrMalformed
	}
}

func (v *HeaderView) jsonEnd(s *jsonScanner) error {
	s.ws()
	if s.i != len(s.b) {
		return ErrMalformed
	}
	return nil
}

// jsonLanguage checks the language value: a string, a number or null.
func (v *HeaderView) jsonLanguage(s *jsonScanner) error {
	switch c := s.peek(); {
	case c == '"':
		_, err := s.stringBytes()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := s.number()
		return err
	case c == 'n' && s.literal("null"):
		return nil
	}
	return ErrNotPlain
}

// jsonRemark checks the remark value: a string or null.
func (v *HeaderView) jsonRemark(s *jsonScanner) error {
	if s.peek() == '"' {
		_, err := s.stringBytes()
		return err
	}
	if s.null() {
		return nil
	}
	return ErrNotPlain
}

// jsonExtFields reads the one extFields object, all values strings.
func (v *HeaderView) jsonExtFields(s *jsonScanner) error {
	if s.peek() != '{' || len(v.fields) > 0 {
		return ErrNotPlain // null, another type, or a repeated extFields
	}
	s.i++
	if s.consume('}') {
		return nil
	}
	for {
		k, err := v.jsonString(s)
		if err != nil || !s.consume(':') {
			return ErrMalformed
		}
		if s.peek() != '"' {
			return ErrNotPlain
		}
		val, err := v.jsonString(s)
		if err != nil {
			return err
		}
		v.fields = append(v.fields, viewField{k: k, v: val})
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			return nil
		}
		return ErrMalformed
	}
}

// jsonString reads a string token as a span: of the header when it has no
// escapes, else of the store.
func (v *HeaderView) jsonString(s *jsonScanner) (viewSpan, error) {
	b, err := s.stringBytes()
	if err != nil {
		return viewSpan{}, err
	}
	if s.plain {
		return viewSpan{off: s.plainStart, n: s.plainEnd - s.plainStart}, nil
	}
	off := len(v.store)
	v.store = append(v.store, b...)
	return viewSpan{off: off, n: len(b), inStore: true}, nil
}

// PeekCode reads the code of a frame (everything after the length field)
// without parsing its header, where that is cheap: from a ROCKETMQ binary
// header, or from a JSON header that starts with {"code":<digits>, as every
// client writes it. ok is false when it cannot tell; the frame may still be
// valid.
func PeekCode(frame []byte) (code int32, ok bool) {
	if len(frame) < headerWordSize+2 {
		return 0, false
	}
	switch SerializeType(frame[0]) {
	case SerializeRocketMQ:
		return int32(int16(binary.BigEndian.Uint16(frame[headerWordSize:]))), true
	case SerializeJSON:
		const prefix = `{"code":`
		h := frame[headerWordSize:]
		if len(h) < len(prefix) || string(h[:len(prefix)]) != prefix {
			return 0, false
		}
		i := len(prefix)
		for ; i < len(h) && i < len(prefix)+6 && h[i] >= '0' && h[i] <= '9'; i++ {
			code = code*10 + int32(h[i]-'0')
		}
		if i == len(prefix) || i >= len(h) || (h[i] != ',' && h[i] != '}') {
			return 0, false
		}
		return code, true
	}
	return 0, false
}
