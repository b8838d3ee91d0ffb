// Package lenient is wheelmq's one implementation of the Java-lenient JSON
// value rules: how a JSON value is read into a string, integer, boolean,
// double or enum field the way RocketMQ's Java side (fastjson 1.2.x) reads
// it, so that whatever a RocketMQ client or a Java broker writes is read
// here as a Java broker or name server would read it. It serves request
// headers (netloop/remoting's hand-written scanner calls the token-level
// functions from its zero-allocation path), request bodies (the value types
// String, Int32, Int64 and Bool, decoded with encoding/json; adminbody's
// Double through ParseFloat) and the metadata files (storage/meta reads
// raw values with ParseInt, ParseBool and ParseString). It imports nothing
// of wheelmq, so that both netloop and storage can use it.
//
// The rules, for one JSON value (the syntax itself must be standard JSON):
//
//   - null is absent: the field keeps the value it had (a Java primitive
//     its default); in a map of strings the key is left out.
//   - A string field takes a string as it is and any other value as its
//     JSON text as written: 1.50 -> "1.50", true -> "true", {"a": 1} ->
//     `{"a": 1}` (fastjson's StringCodec).
//   - An integer field (int, long) takes a number with a fraction dropped
//     toward zero (1.9 -> 1, -1.9 -> -1, 1e3 -> 1000); a string holding a
//     decimal integer with an optional sign, optionally followed by '.' and
//     zeros ("42", "+5", "7.0"; "" is 0; " 1", "1.5", "1e3" are refused);
//     true as 1 and false as 0. A value outside the field's range, an
//     object and an array are refused.
//   - A boolean field takes true and false; a number read as an integer, 0
//     false and 1 true (so 1.9 is true and 0.5 false, as fastjson's
//     intValue() == 1 has it);
//     the strings "true"/"false" in any case, "1"/"0", "Y"/"T" (true),
//     "N"/"F" (false) and "" (false), as fastjson's castToBoolean.
//     Anything else is refused.
//   - A double field takes a number, or a string strconv.ParseFloat reads.
//   - An enum field takes a name as it is, or an ordinal: an integer
//     literal in the table (fastjson's EnumDeserializer); any other number
//     is no ordinal (an unknown value).
//
// Text taken as it is written has each invalid UTF-8 byte replaced by
// U+FFFD, as decoded strings have.
//
// Where fastjson differs, deliberately: a number outside an integer
// field's range is refused (fastjson keeps its low bits); a boolean from a
// number other than 0 or 1 is refused (fastjson reads false); commas in a
// string read as an integer are refused (fastjson's castToInt drops them).
// And one difference kept from before: "" read as a number or a boolean is
// 0 or false, and "null" or "NULL" is refused, where fastjson reads all
// three as null, so that a primitive keeps its default (a group created
// with "consumeEnable":"" stays enabled on a Java broker and is disabled
// here).
package lenient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrType is wrapped by every error of a value whose JSON type, or whose
// content, cannot be read as the field's kind.
var ErrType = errors.New("lenient: value cannot be read as the field's type")

// IntFromNumber reads a JSON number token (its text, well-formed) as an
// integer of the given bit size (32 or 64): an integer literal exactly, a
// fraction or exponent through float64 with the fraction dropped toward
// zero. A value outside the range is an error.
func IntFromNumber(text []byte, bits int) (int64, error) {
	if isIntegerLiteral(text) {
		v, err := strconv.ParseInt(string(text), 10, bits)
		if err != nil {
			return 0, fmt.Errorf("%w: number %s does not fit in int%d", ErrType, text, bits)
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil { // a well-formed token fails only on magnitude
		return 0, fmt.Errorf("%w: number %s does not fit in int%d", ErrType, text, bits)
	}
	f = math.Trunc(f)
	if lim := math.Ldexp(1, bits-1); f < -lim || f >= lim {
		return 0, fmt.Errorf("%w: number %s does not fit in int%d", ErrType, text, bits)
	}
	return int64(f), nil
}

// IntFromString reads the content of a JSON string (unescaped) as an
// integer of the given bit size: a decimal integer with an optional sign,
// nothing around it, and optionally a '.' followed by zeros only ("7.0",
// "7."), which fastjson's castToInt drops; "" is 0.
func IntFromString(s []byte, bits int) (int64, error) {
	if len(s) == 0 {
		return 0, nil
	}
	digits := s
	if dot := bytes.LastIndexByte(s, '.'); dot >= 0 && len(bytes.TrimRight(s[dot+1:], "0")) == 0 {
		digits = s[:dot]
	}
	v, err := strconv.ParseInt(string(digits), 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%w: string %q is not an int%d", ErrType, s, bits)
	}
	return v, nil
}

// IntFromBool reads true as 1 and false as 0.
func IntFromBool(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// BoolFromNumber reads a JSON number token as a boolean: read as an integer
// (a fraction dropped), 0 is false and 1 true; anything else is an error.
func BoolFromNumber(text []byte) (bool, error) {
	n, err := IntFromNumber(text, 64)
	switch {
	case err != nil:
		return false, fmt.Errorf("%w: cannot read %s as a boolean", ErrType, text)
	case n == 0:
		return false, nil
	case n == 1:
		return true, nil
	}
	return false, fmt.Errorf("%w: cannot read %s as a boolean", ErrType, text)
}

// BoolFromString reads the content of a JSON string as a boolean, as
// fastjson's castToBoolean does: "true"/"false" in any case, "1"/"0",
// "Y"/"T" (true), "N"/"F" (false); "" is false.
func BoolFromString(s []byte) (bool, error) {
	str := string(s) // no allocation: it does not escape
	switch {
	case strings.EqualFold(str, "true"), str == "1", str == "Y", str == "T":
		return true, nil
	case strings.EqualFold(str, "false"), str == "0", str == "N", str == "F", str == "":
		return false, nil
	}
	return false, fmt.Errorf("%w: cannot read string %q as a boolean", ErrType, s)
}

// EnumOrdinal reads a JSON number token as the ordinal of an enum with n
// constants, as fastjson reads an enum from a number: ok only for an
// integer literal in [0, n). "-0" is 0; a fraction or exponent is not an
// ordinal.
func EnumOrdinal(text []byte, n int) (ordinal int, ok bool) {
	if !isIntegerLiteral(text) {
		return 0, false
	}
	v, err := strconv.ParseInt(string(text), 10, 64)
	if err != nil || v < 0 || v >= int64(n) {
		return 0, false
	}
	return int(v), true
}

// Text returns a value's JSON text (a number, true, false, an object or an
// array, as written) as a string, each invalid UTF-8 byte replaced by
// U+FFFD as in a decoded string.
func Text(raw []byte) string {
	if utf8.Valid(raw) {
		return string(raw)
	}
	out := make([]byte, 0, len(raw)+8)
	for len(raw) > 0 {
		r, size := utf8.DecodeRune(raw)
		out = utf8.AppendRune(out, r) // RuneError for an invalid byte
		raw = raw[size:]
	}
	return string(out)
}

// isIntegerLiteral reports whether text is a JSON integer literal: an
// optional '-', then 0 or digits without a leading zero; no fraction, no
// exponent.
func isIntegerLiteral(text []byte) bool {
	if len(text) > 0 && text[0] == '-' {
		text = text[1:]
	}
	if len(text) == 0 || (text[0] == '0' && len(text) > 1) {
		return false
	}
	for _, c := range text {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isNumberStart reports whether c starts a JSON number token.
func isNumberStart(c byte) bool { return c == '-' || (c >= '0' && c <= '9') }

// unquote decodes a JSON string token.
func unquote(raw []byte) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("lenient: invalid string %.40q: %w", raw, err)
	}
	return s, nil
}

// The Parse functions read one whole, well-formed JSON value (what
// encoding/json hands to an UnmarshalJSON method, or a json.RawMessage) by
// the rules above; set is false when the value is null (absent).

// ParseInt reads raw as an integer of the given bit size.
func ParseInt(raw []byte, bits int) (v int64, set bool, err error) {
	switch c := first(raw); {
	case c == 'n':
		return 0, false, nil
	case c == 't':
		return 1, true, nil
	case c == 'f':
		return 0, true, nil
	case c == '"':
		s, err := unquote(raw)
		if err != nil {
			return 0, false, err
		}
		v, err = IntFromString([]byte(s), bits)
		return v, err == nil, err
	case isNumberStart(c):
		v, err = IntFromNumber(raw, bits)
		return v, err == nil, err
	}
	return 0, false, fmt.Errorf("%w: cannot read %.20s as a number", ErrType, raw)
}

// ParseBool reads raw as a boolean.
func ParseBool(raw []byte) (v, set bool, err error) {
	switch c := first(raw); {
	case c == 'n':
		return false, false, nil
	case c == 't':
		return true, true, nil
	case c == 'f':
		return false, true, nil
	case c == '"':
		s, err := unquote(raw)
		if err != nil {
			return false, false, err
		}
		v, err = BoolFromString([]byte(s))
		return v, err == nil, err
	case isNumberStart(c):
		v, err = BoolFromNumber(raw)
		return v, err == nil, err
	}
	return false, false, fmt.Errorf("%w: cannot read %.20s as a boolean", ErrType, raw)
}

// ParseString reads raw as a string: a string decoded, any other value as
// its JSON text (Text).
func ParseString(raw []byte) (s string, set bool, err error) {
	switch c := first(raw); c {
	case 'n':
		return "", false, nil
	case '"':
		s, err = unquote(raw)
		return s, err == nil, err
	case '{', '[':
		if !json.Valid(raw) { // what encoding/json hands over always is
			return "", false, fmt.Errorf("lenient: invalid JSON %.40q", raw)
		}
	}
	return Text(raw), true, nil
}

// ParseFloat reads raw as a double: a number, or a string whose text
// strconv.ParseFloat reads.
func ParseFloat(raw []byte) (v float64, set bool, err error) {
	text := string(raw)
	switch c := first(raw); {
	case c == 'n':
		return 0, false, nil
	case c == '"':
		if text, err = unquote(raw); err != nil {
			return 0, false, err
		}
	case !isNumberStart(c):
		return 0, false, fmt.Errorf("%w: cannot read %.20s as a double", ErrType, raw)
	}
	v, err = strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %q is not a double", ErrType, text)
	}
	return v, true, nil
}

// first returns raw's first byte, or 0 when it is empty.
func first(raw []byte) byte {
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}
