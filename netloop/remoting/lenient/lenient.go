// Package lenient has JSON value types that decode request bodies the way
// RocketMQ's Java side (fastjson 1.2.x) reads them, so that a body any
// RocketMQ client writes is read here as a Java broker or name server would:
// numbers where strings are expected, strings where numbers are expected,
// booleans as numbers and the reverse, null and missing fields as zero.
//
// The types are for bodies (heartbeats, broker registrations, admin
// bodies), decoded with encoding/json into structs that use them; request
// headers have their own hand-written scanner in package remoting.
// The syntax must still be standard JSON.
package lenient

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// String is a string field. It reads a JSON string as it is; a number,
// boolean, object or array as its JSON text (as fastjson's StringCodec
// does; invalid UTF-8 inside becomes U+FFFD); null leaves it.
type String string

// UnmarshalJSON implements json.Unmarshaler.
func (s *String) UnmarshalJSON(b []byte) error {
	switch b[0] {
	case 'n':
		return nil
	case '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = String(v)
		return nil
	}
	if !json.Valid(b) {
		return fmt.Errorf("lenient string: invalid JSON %q", b)
	}
	if !utf8.Valid(b) { // invalid bytes inside nested strings
		var sb strings.Builder
		for _, r := range string(b) { // U+FFFD for each invalid byte, as in decoded strings
			sb.WriteRune(r)
		}
		*s = String(sb.String())
		return nil
	}
	*s = String(b)
	return nil
}

// Strings converts a slice of String to plain strings.
func Strings(in []String) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}

// Int32 is an int field (Java int/Integer). It reads a JSON number (a
// fraction is dropped toward zero), a string holding a decimal integer ("" is
// 0), or a boolean (true is 1); null leaves it. A value outside the int32
// range is an error.
type Int32 int32

// UnmarshalJSON implements json.Unmarshaler.
func (n *Int32) UnmarshalJSON(b []byte) error {
	v, set, err := integer(b, 32)
	if err != nil {
		return fmt.Errorf("lenient int32: %w", err)
	}
	if set {
		*n = Int32(v)
	}
	return nil
}

// Int64 is a long field (Java long/Long), read like Int32 with a 64-bit
// range.
type Int64 int64

// UnmarshalJSON implements json.Unmarshaler.
func (n *Int64) UnmarshalJSON(b []byte) error {
	v, set, err := integer(b, 64)
	if err != nil {
		return fmt.Errorf("lenient int64: %w", err)
	}
	if set {
		*n = Int64(v)
	}
	return nil
}

// integer reads one JSON value as an integer of the given bit size; set is
// false for null.
func integer(b []byte, bits int) (v int64, set bool, err error) {
	switch b[0] {
	case 'n':
		return 0, false, nil
	case 't':
		return 1, true, nil
	case 'f':
		return 0, true, nil
	case '{', '[':
		return 0, false, fmt.Errorf("cannot read %.20s as a number", b)
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return 0, false, err
		}
		if s == "" {
			return 0, true, nil
		}
		v, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return 0, false, fmt.Errorf("string %q is not an int%d", s, bits)
		}
		return v, true, nil
	}
	if v, err := strconv.ParseInt(string(b), 10, bits); err == nil {
		return v, true, nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !isRangeError(err) {
		return 0, false, fmt.Errorf("invalid number %q", b)
	}
	f = math.Trunc(f)
	lo, hi := -math.Ldexp(1, bits-1), math.Ldexp(1, bits-1)
	if err != nil || f < lo || f >= hi {
		return 0, false, fmt.Errorf("number %s does not fit in int%d", b, bits)
	}
	return int64(f), true, nil
}

// isRangeError reports a strconv range error.
func isRangeError(err error) bool {
	var ne *strconv.NumError
	return errors.As(err, &ne) && ne.Err == strconv.ErrRange
}

// Bool is a boolean field. It reads a JSON boolean; a number (1 is true, 0
// false); a string "true"/"false" in any case, "1"/"0", "Y"/"N", "T"/"F" or
// "" (false), as fastjson's castToBoolean does; null leaves it.
type Bool bool

// UnmarshalJSON implements json.Unmarshaler.
func (v *Bool) UnmarshalJSON(b []byte) error {
	switch b[0] {
	case 'n':
		return nil
	case 't', 'f':
		var x bool
		if err := json.Unmarshal(b, &x); err != nil {
			return err
		}
		*v = Bool(x)
		return nil
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		switch {
		case strings.EqualFold(s, "true"), s == "1", s == "Y", s == "T":
			*v = true
		case strings.EqualFold(s, "false"), s == "0", s == "N", s == "F", s == "":
			*v = false
		default:
			return fmt.Errorf("lenient bool: cannot read string %q as a boolean", s)
		}
		return nil
	case '{', '[':
		return fmt.Errorf("lenient bool: cannot read %.20s as a boolean", b)
	}
	n, _, err := integer(b, 64)
	if err != nil {
		return fmt.Errorf("lenient bool: %w", err)
	}
	switch n {
	case 0:
		*v = false
	case 1:
		*v = true
	default:
		return fmt.Errorf("lenient bool: cannot read %s as a boolean", b)
	}
	return nil
}

// Enum returns the name an enum field stands for: fastjson reads a Java
// enum from its name or from its ordinal, so a number (read by String as
// its text) that indexes names is replaced by that name. Anything else is
// returned as it is.
func Enum(s String, names []string) string {
	if i, err := strconv.Atoi(string(s)); err == nil && i >= 0 && i < len(names) {
		return names[i]
	}
	return string(s)
}
