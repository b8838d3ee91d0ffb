package sql92

import (
	"bytes"
	"math"
	"strconv"
)

// kind is the Java type of a value during evaluation: RocketMQ's literals
// are Integer (int32 range), Long or Double; properties are strings.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindInt    // java.lang.Integer
	kindLong   // java.lang.Long
	kindDouble // java.lang.Double
	kindString
	kindErr // the Java evaluator threw: the message does not match
)

// value is an evaluation result. Strings alias the properties being
// evaluated (or the expression's literals); nothing is copied.
type value struct {
	kind kind
	b    bool
	i    int64
	f    float64
	s    []byte
}

var (
	vNull  = value{}
	vTrue  = value{kind: kindBool, b: true}
	vFalse = value{kind: kindBool}
	vErr   = value{kind: kindErr}
)

func boolValue(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}

func (v value) isNumber() bool {
	return v.kind == kindInt || v.kind == kindLong || v.kind == kindDouble
}

// compare orders l and r the way RocketMQ's ComparisonExpression does
// (with string conversion on): values of one type compare naturally; an
// Integer meets a Long as long, either meets a Double as double; a string
// meeting a number is converted to the number's type (Integer.valueOf,
// Long.valueOf, Double.valueOf) and a string meeting a boolean with
// Boolean.valueOf; a boolean meeting a number is "less" (-1). ok is false
// where Java throws: a string that does not convert, or a boolean on the
// left of a string (a ClassCastException in Java). Neither may be null.
func compare(l, r value) (c int, ok bool) {
	if l.kind == r.kind {
		switch l.kind {
		case kindBool:
			return cmpBool(l.b, r.b), true
		case kindInt, kindLong:
			return cmpInt(l.i, r.i), true
		case kindDouble:
			return cmpDouble(l.f, r.f), true
		case kindString:
			return bytes.Compare(l.s, r.s), true
		}
		return 0, true
	}
	switch l.kind {
	case kindBool:
		if r.kind == kindString {
			return 0, false
		}
	case kindInt, kindLong:
		switch r.kind {
		case kindInt, kindLong:
			return cmpInt(l.i, r.i), true
		case kindDouble:
			return cmpDouble(float64(l.i), r.f), true
		case kindString:
			n, ok := parseJavaInt(r.s, l.kind == kindInt)
			return cmpInt(l.i, n), ok
		}
	case kindDouble:
		switch r.kind {
		case kindInt, kindLong:
			return cmpDouble(l.f, float64(r.i)), true
		case kindString:
			f, ok := parseJavaDouble(r.s)
			return cmpDouble(l.f, f), ok
		}
	case kindString:
		switch r.kind {
		case kindBool:
			return cmpBool(equalFoldASCII(l.s, "true"), r.b), true
		case kindInt, kindLong:
			n, ok := parseJavaInt(l.s, r.kind == kindInt)
			return cmpInt(n, r.i), ok
		case kindDouble:
			f, ok := parseJavaDouble(l.s)
			return cmpDouble(f, r.f), ok
		}
	}
	return -1, true
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpDouble is Java's Double.compare: numeric order, -0.0 below 0.0, NaN
// above everything and equal to itself.
func cmpDouble(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := javaDoubleBits(a), javaDoubleBits(b)
	switch {
	case ab == bb:
		return 0
	case ab < bb:
		return -1
	}
	return 1
}

// javaDoubleBits is Double.doubleToLongBits: every NaN is one canonical NaN.
func javaDoubleBits(f float64) int64 {
	if f != f {
		return 0x7ff8000000000000
	}
	return int64(math.Float64bits(f))
}

// parseJavaInt is Integer.parseInt (int32) or Long.parseLong: an optional
// sign and ASCII digits, nothing else, within range. (Java also accepts
// non-ASCII Unicode digits; they are refused here.)
func parseJavaInt(b []byte, int32Range bool) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	limit := uint64(math.MaxInt64)
	if int32Range {
		limit = math.MaxInt32
	}
	if neg {
		limit++
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n > limit {
			return 0, false
		}
	}
	if neg {
		return -int64(n), true // n == MaxInt64+1 wraps to MinInt64
	}
	return int64(n), true
}

// parseJavaDouble is Double.valueOf: surrounding whitespace (<= ' ') is
// ignored; then an optional sign and NaN, Infinity, a decimal (5, 5., .5,
// 5e-3) or a hexadecimal float (0x1.8p1), optionally followed by one of
// f F d D.
func parseJavaDouble(b []byte) (float64, bool) {
	for len(b) > 0 && b[0] <= ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] <= ' ' {
		b = b[:len(b)-1]
	}
	body := b
	neg := false
	if len(body) > 0 && (body[0] == '+' || body[0] == '-') {
		neg = body[0] == '-'
		body = body[1:]
	}
	switch string(body) {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if n := len(b); n > 0 {
		switch b[n-1] {
		case 'f', 'F', 'd', 'D':
			b = b[:n-1]
		}
	}
	if !javaFloatSyntax(b) {
		return 0, false
	}
	// b is plain decimal or hex float syntax that strconv also accepts;
	// overflow yields ±Inf like Java.
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return f, true
}

// javaFloatSyntax checks [sign] (digits [. digits] | . digits) [e [sign]
// digits], or [sign] 0x hexdigits [. hexdigits] p [sign] digits.
func javaFloatSyntax(b []byte) bool {
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	hex := len(b)-i > 2 && b[i] == '0' && (b[i+1] == 'x' || b[i+1] == 'X')
	if hex {
		i += 2
	}
	digit := isDigit
	if hex {
		digit = isHexDigit
	}
	mant := 0
	for i < len(b) && digit(b[i]) {
		i, mant = i+1, mant+1
	}
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && digit(b[i]) {
			i, mant = i+1, mant+1
		}
	}
	if mant == 0 {
		return false
	}
	expChar := byte('e')
	if hex {
		expChar = 'p'
	}
	if i < len(b) && b[i]|0x20 == expChar {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		exp := 0
		for i < len(b) && isDigit(b[i]) {
			i, exp = i+1, exp+1
		}
		if exp == 0 {
			return false
		}
	} else if hex {
		return false // Java requires the binary exponent
	}
	return i == len(b)
}

func isHexDigit(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// equalFoldASCII is Java's "true".equalsIgnoreCase(s) for ASCII t.
func equalFoldASCII(s []byte, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i]|0x20 != t[i]|0x20 {
			return false
		}
	}
	return true
}
