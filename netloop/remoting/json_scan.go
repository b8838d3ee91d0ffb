package remoting

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/wheelmq/wheelmq/storage/lenient"
)

// A small JSON scanner for RemotingCommand headers, without reflection:
// headers are decoded for every request on the hot path. The syntax is
// strict JSON (what encoding/json accepts); the values are read leniently,
// the way the Java broker reads them (see json_header.go), by the rules of
// package lenient, which does every value conversion. A differential fuzz
// test holds it to a reference decoder built on encoding/json and
// lenient's Parse functions.

// maxJSONDepth is the nesting limit, the same as encoding/json's.
const maxJSONDepth = 10000

// jsonScanner reads JSON from b starting at i.
type jsonScanner struct {
	b       []byte
	i       int
	scratch []byte // reused for unescaping
	// str is b as one string, made once; strings without escapes are
	// returned as substrings of it, so decoding a header costs one string
	// allocation instead of one per field. Substrings keep the whole header
	// alive, which is small.
	str string
	// plain, plainStart and plainEnd describe the last string read by
	// stringBytes: whether it had no escapes, and where its text lies.
	plain                bool
	plainStart, plainEnd int
}

// ws skips JSON whitespace.
func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// consume skips whitespace and then c if it is next, reporting whether it
// was.
func (s *jsonScanner) consume(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek returns the next non-space byte, or 0 at the end.
func (s *jsonScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// literal consumes the keyword lit (true, false, null) if it is next.
func (s *jsonScanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// null consumes a null literal if it is next.
func (s *jsonScanner) null() bool {
	return s.peek() == 'n' && s.literal("null")
}

// stringBytes reads a string token and returns its unescaped bytes. The
// result aliases the input or s.scratch and is valid until the next call.
// Invalid UTF-8 and unpaired surrogates become U+FFFD, as in encoding/json.
func (s *jsonScanner) stringBytes() ([]byte, error) {
	if s.peek() != '"' {
		return nil, errJSONType
	}
	s.i++
	start := s.i
	// Fast path: no escapes, no control bytes, valid UTF-8.
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			s.plain, s.plainStart, s.plainEnd = true, start, s.i
			s.i++
			return s.b[start : s.i-1], nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		if c < utf8.RuneSelf {
			s.i++
			continue
		}
		r, size := utf8.DecodeRune(s.b[s.i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		s.i += size
	}
	s.plain = false
	out := append(s.scratch[:0], s.b[start:s.i]...)
	for {
		if s.i >= len(s.b) {
			return nil, errJSONSyntax
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			s.scratch = out
			return out, nil
		case c < 0x20:
			return nil, errJSONSyntax
		case c == '\\':
			var err error
			if out, err = s.escape(out); err != nil {
				return nil, err
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			out = utf8.AppendRune(out, r) // RuneError for invalid bytes
			s.i += size
		}
	}
}

// escape decodes the escape sequence at s.i (which is a backslash) onto out.
func (s *jsonScanner) escape(out []byte) ([]byte, error) {
	if s.i+1 >= len(s.b) {
		return nil, errJSONSyntax
	}
	c := s.b[s.i+1]
	switch c {
	case '"', '\\', '/':
		s.i += 2
		return append(out, c), nil
	case 'b':
		s.i += 2
		return append(out, '\b'), nil
	case 'f':
		s.i += 2
		return append(out, '\f'), nil
	case 'n':
		s.i += 2
		return append(out, '\n'), nil
	case 'r':
		s.i += 2
		return append(out, '\r'), nil
	case 't':
		s.i += 2
		return append(out, '\t'), nil
	case 'u':
		r := hex4(s.b[s.i:])
		if r < 0 {
			return nil, errJSONSyntax
		}
		s.i += 6
		if utf16.IsSurrogate(r) {
			if r2 := hex4(s.b[s.i:]); r2 >= 0 {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					s.i += 6
					return utf8.AppendRune(out, dec), nil
				}
			}
			r = utf8.RuneError
		}
		return utf8.AppendRune(out, r), nil
	}
	return nil, errJSONSyntax
}

// hex4 parses a \uXXXX escape at the start of b, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// number reads a number token and returns its text.
func (s *jsonScanner) number() ([]byte, error) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return nil, errJSONSyntax
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return nil, errJSONSyntax
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return nil, errJSONSyntax
		}
	}
	return s.b[start:s.i], nil
}

// digits skips decimal digits and returns how many there were.
func (s *jsonScanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// int32Value reads a value for an int32 field into *dst by the integer
// rules of package lenient (which does every conversion; the scanner only
// finds the token): null leaves it; a number sets it (a fraction is
// dropped, toward zero); a string holding a decimal integer sets it ("" is
// 0); true is 1 and false 0. A value out of the int32 range, any other
// string, an object or an array is an error.
func (s *jsonScanner) int32Value(dst *int32) error {
	var v int64
	var err error
	switch c := s.peek(); {
	case c == '-' || (c >= '0' && c <= '9'):
		var text []byte
		if text, err = s.number(); err != nil {
			return err
		}
		v, err = lenient.IntFromNumber(text, 32)
	case c == '"':
		var b []byte
		if b, err = s.stringBytes(); err != nil {
			return err
		}
		v, err = lenient.IntFromString(b, 32)
	case c == 't' && s.literal("true"):
		v = lenient.IntFromBool(true)
	case c == 'f' && s.literal("false"):
		v = lenient.IntFromBool(false)
	case c == 'n' && s.literal("null"):
		return nil
	case c == '{' || c == '[':
		return errJSONType
	default:
		return errJSONSyntax
	}
	if err != nil {
		return errJSONType
	}
	*dst = int32(v)
	return nil
}

// textValue reads any value as text: a string as it is, a number, true or
// false as its JSON text, an object or array as its JSON text as it appears
// in the input (invalid UTF-8 replaced by U+FFFD). present is false for
// null. depth is the nesting depth of the value's container.
func (s *jsonScanner) textValue(depth int) (text string, present bool, err error) {
	switch c := s.peek(); {
	case c == '"':
		text, err = s.stringText()
		return text, err == nil, err
	case c == 'n':
		if s.literal("null") {
			return "", false, nil
		}
		return "", false, errJSONSyntax
	}
	start := s.i
	if err := s.skip(depth); err != nil {
		return "", false, err
	}
	return s.text(start, s.i), true, nil
}

// languageValue reads the language field: a name as it is, or a
// LanguageCode ordinal (lenient.EnumOrdinal: an integer literal; anything
// else numeric, and ordinals outside the table, read as OTHER). null
// leaves *dst; other values are an error.
func (s *jsonScanner) languageValue(dst *string) error {
	switch c := s.peek(); {
	case c == '"':
		return s.stringValue(dst)
	case c == '-' || (c >= '0' && c <= '9'):
		text, err := s.number()
		if err != nil {
			return err
		}
		if i, ok := lenient.EnumOrdinal(text, len(languageNames)); ok {
			*dst = languageNames[i]
		} else {
			*dst = languageNames[languageOther]
		}
		return nil
	case c == 'n' && s.literal("null"):
		return nil
	case c == 't' || c == 'f' || c == '{' || c == '[':
		return errJSONType
	}
	return errJSONSyntax
}

// stringValue reads a value for a string field into *dst: null leaves it,
// a string sets it, anything else is an error.
func (s *jsonScanner) stringValue(dst *string) error {
	if s.peek() != '"' {
		if s.null() {
			return nil
		}
		return errJSONType
	}
	text, err := s.stringText()
	if err != nil {
		return err
	}
	*dst = text
	return nil
}

// text returns the input bytes [start, end), a value's JSON text, as
// lenient.Text does (invalid bytes become U+FFFD each), sharing s.str's
// memory when they are valid UTF-8, which lenient.Text then returns as
// they are.
func (s *jsonScanner) text(start, end int) string {
	if b := s.b[start:end]; !utf8.Valid(b) {
		return lenient.Text(b)
	}
	return s.shared(start, end)
}

// shared returns the input bytes [start, end) as a substring of s.str,
// made once per header.
func (s *jsonScanner) shared(start, end int) string {
	if s.str == "" {
		s.str = string(s.b)
	}
	return s.str[start:end]
}

// stringText reads a string token as a Go string, sharing s.str's memory
// when the token has no escapes.
func (s *jsonScanner) stringText() (string, error) {
	b, err := s.stringBytes()
	if err != nil {
		return "", err
	}
	if s.plain {
		return s.shared(s.plainStart, s.plainEnd), nil
	}
	return string(b), nil
}

// skip reads and discards any value, checking its syntax. depth is the
// nesting depth of the value's container.
func (s *jsonScanner) skip(depth int) error {
	switch c := s.peek(); c {
	case '"':
		_, err := s.stringBytes()
		return err
	case '{', '[':
		if depth+1 > maxJSONDepth {
			return errJSONDepth
		}
		s.i++
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		if s.consume(end) {
			return nil
		}
		for {
			if c == '{' {
				if _, err := s.stringBytes(); err != nil {
					return errJSONSyntax
				}
				if !s.consume(':') {
					return errJSONSyntax
				}
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			if s.consume(end) {
				return nil
			}
			if !s.consume(',') {
				return errJSONSyntax
			}
		}
	case 't':
		if s.literal("true") {
			return nil
		}
	case 'f':
		if s.literal("false") {
			return nil
		}
	case 'n':
		if s.literal("null") {
			return nil
		}
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			_, err := s.number()
			return err
		}
	}
	return errJSONSyntax
}
