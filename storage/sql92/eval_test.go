package sql92

import (
	"testing"

	"github.com/wheelmq/wheelmq/storage/message"
)

// props is the property set of facts 11.8 (verified against RocketMQ's own
// filter classes), plus a few more for the wider cases.
var props = map[string]string{
	"a": "10", "s": "abc", "f": "1.5", "b": "true", "x": "xyz", "TAGS": "TagA",
	"big": "3000000000", "neg": "-7", "nan": "NaN", "sp": " 2.5 ", "d": "2.5d", "hex": "0x1p3",
	"q": "it's", "B": "TRUE", "zero": "0", "plus": "+4", "min": "-2147483648",
}

const (
	T   = ResultTrue
	F   = ResultFalse
	N   = ResultNull
	ERR = ResultError
)

func TestEvalRocketMQSemantics(t *testing.T) {
	tests := []struct {
		expr string
		want Result
	}{
		// Facts 11.8, row by row.
		{"a > 5", T}, {"a = 10", T}, {"a = '10'", T},
		{"zz > 5", N},
		{"zz <> 10", N}, {"NOT (zz = 10)", N}, {"zz IS NULL", T},
		{"x > 5", ERR}, {"x = 5", ERR}, {"f > 1", ERR},
		{"f > 1.0", T}, {"f = 1.5", T}, {"a > 5.5", T},
		{"a BETWEEN 1 AND 20", T}, {"s IN ('abc','d')", T},
		{"b = TRUE", T}, {"b = 'true'", T},
		{"b", F},
		{"a > 5 AND zz = 1", N},
		{"a < 5 AND zz = 1", F},
		{"zz CONTAINS 'q'", F}, {"s = 'ABC'", F},

		// Numeric comparisons and type conversion.
		{"a >= 10", T}, {"a <= 10", T}, {"a < 10", F}, {"a <> 10", F}, {"a <> 11", T},
		{"a = 10.0", T}, {"a > 9.99", T}, {"a = 10L", T},
		{"a > -5", T}, {"neg < -5", T}, {"neg = -7", T}, {"neg > - -8", F}, {"a > +5", T},
		{"big > 5", ERR}, // "3000000000" is not an Integer (5 is one)
		{"big > 2147483648", T}, {"big = 3000000000", T}, {"big > 5.0", T},
		{"min = -2147483648", T},                             // the literal is -(Long 2147483648); the property parses as a Long
		{"plus = 4", T}, {"zero = 0", T}, {"zero = -0.0", F}, // Double.compare: 0.0 > -0.0
		{"sp > 2", ERR}, {"sp > 2.0", T}, {"sp = 2.5", T}, // Double.valueOf trims, Integer.valueOf does not
		{"d = 2.5", T}, {"hex = 8.0", T},
		{"nan > 1.0", T}, {"nan = nan", T}, {"nan < 1.0", F}, // Double.compare puts NaN on top
		{"x <> 5", ERR}, {"NOT (x = 5)", ERR},
		{"a > f", T}, {"f > a", F}, {"a > s", ERR}, {"a = s", F}, // two strings: > reads doubles, = compares text
		{"a > -zz", N}, {"a > -s", N}, // negation of a string is NULL

		// Booleans.
		{"B = TRUE", T}, {"b = 'TRUE'", F}, {"B = 'TRUE'", T}, {"b = FALSE", F}, {"s = TRUE", F}, {"s = FALSE", T},
		{"TRUE", T}, {"FALSE", F}, {"NULL", N}, {"NOT TRUE", F}, {"NOT NULL", N},
		{"TRUE = TRUE", T}, {"TRUE = FALSE", F}, {"TRUE = s", ERR}, {"1 = TRUE", F},
		{"(a = 10) = TRUE", T}, {"(a = 10) = 1", F}, {"(x > 5) = TRUE", ERR},
		{"zz", N}, {"NOT zz", N}, {"NOT b", T}, {"b OR zz", N}, {"b AND zz", F},

		// NULL handling in =.
		{"zz = yy", T}, {"a = zz", F}, {"zz = a", N}, {"zz IS NOT NULL", F}, {"a IS NOT NULL", T},
		{"(a = zz) IS NULL", F}, {"(zz = a) IS NULL", T},

		// Strings.
		{"s = 'abc'", T}, {"s <> 'abc'", F}, {"s <> 'ab'", T}, {"q = 'it''s'", T},
		{"TAGS = 'TagA'", T}, {"TAGS IN ('TagA', 'TagB')", T}, {"TAGS = 'taga'", F}, {"tags = 'TagA'", N},
		{"s IN ('x', 'y')", F}, {"s NOT IN ('x', 'y')", T}, {"s NOT IN ('abc')", F}, {"zz NOT IN ('abc')", N},
		{"s IN ('a','b','c','d','abc','f')", T}, {"s IN ('a','b','c','d','e','f')", F}, // set form
		{"s CONTAINS 'b'", T}, {"s CONTAINS 'z'", F}, {"s NOT CONTAINS 'z'", T}, {"zz NOT CONTAINS 'z'", F},
		{"s STARTSWITH 'ab'", T}, {"s ENDSWITH 'bc'", T}, {"s NOT STARTSWITH 'ab'", F}, {"s NOT ENDSWITH 'x'", T},
		{"s CONTAINS ''", F}, {"s NOT CONTAINS ''", F}, {"a CONTAINS '1'", T}, {"5 CONTAINS '5'", F},

		// BETWEEN.
		{"a BETWEEN 10 AND 10", T}, {"a BETWEEN 11 AND 20", F}, {"a NOT BETWEEN 11 AND 20", T},
		{"a NOT BETWEEN 1 AND 20", F}, {"zz BETWEEN 1 AND 2", N}, {"zz NOT BETWEEN 1 AND 2", N},
		{"x BETWEEN 1 AND 2", ERR}, {"a BETWEEN 5 AND -5", F}, {"f BETWEEN 1.0 AND 2.0", T}, {"f BETWEEN 1.0 AND 2", ERR}, // "1.5" is no Integer

		// Three-valued logic and errors through AND/OR.
		{"zz = 1 OR a = 10", T}, {"zz = 1 OR a = 11", N}, {"a = 11 OR a = 12", F},
		{"a = 11 AND x > 5", F}, {"x > 5 AND a = 11", ERR}, {"a = 10 OR x > 5", T}, {"x > 5 OR a = 10", ERR},
		{"zz = 1 AND x > 5", ERR}, {"NOT (x > 5)", ERR},
		{"NOT a = 10", F}, // (NOT a) = 10: RocketMQ's precedence
		{"NOT (a = 10) OR s = 'abc'", T},
		{"a > 5 AND s = 'abc' AND TAGS IN ('TagA') AND zz IS NULL", T},

		// Comments and case.
		{"a > 5 -- trailing comment", T}, {"a /* x */ > 5", T}, {"a>5 and s='abc'", T}, {"a > 5 Or zz = 1", T},
	}
	for _, tt := range tests {
		e, err := Parse(tt.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.expr, err)
			continue
		}
		if got := e.EvalMap(props); got != tt.want {
			t.Errorf("%q = %v, want %v", tt.expr, got, tt.want)
		}
		if got := e.Eval(message.EncodeProperties(props)); got != tt.want {
			t.Errorf("%q on encoded properties = %v, want %v", tt.expr, got, tt.want)
		}
		if e.Match(message.EncodeProperties(props)) != (tt.want == T) {
			t.Errorf("Match(%q) disagrees with Eval", tt.expr)
		}
		// The canonical form evaluates the same.
		e2, err := Parse(e.String())
		if err != nil {
			t.Errorf("Parse(String() of %q = %q): %v", tt.expr, e.String(), err)
			continue
		}
		if got := e2.EvalMap(props); got != tt.want {
			t.Errorf("%q (canonical %q) = %v, want %v", tt.expr, e.String(), got, tt.want)
		}
	}
}

func TestEvalEmptyAndMalformedProperties(t *testing.T) {
	e, err := Parse("a IS NULL")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "\x02\x02", "a\x02", "\x01a\x02", "a\x01x\x01y\x02b\x010\x02"} {
		if !e.Match([]byte(p)) {
			t.Errorf("properties %q: want a match (a missing)", p)
		}
	}
	if e.Match([]byte("a\x011\x02b\x010\x02")) {
		t.Error("a present: want no match")
	}
	// Last occurrence of a key wins, like the clients' decoders.
	last, _ := Parse("k = 2")
	if !last.Match([]byte("k\x011\x02k\x012\x02")) {
		t.Error("duplicate key: the last value must win")
	}
	if got := last.EvalMap(nil); got != ResultNull {
		t.Errorf("nil map: %v, want NULL", got)
	}
}

func TestManyPropertiesBeyondTheCache(t *testing.T) {
	// More distinct properties than the evaluator caches.
	expr := "p0 = 0 AND p1 = 1 AND p2 = 2 AND p3 = 3 AND p4 = 4 AND p5 = 5 AND p6 = 6 AND p7 = 7 AND p8 = 8 AND p9 = 9 AND p9 > 8"
	e, err := Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for i := 0; i < 10; i++ {
		m["p"+string(rune('0'+i))] = string(rune('0' + i))
	}
	if !e.Match(message.EncodeProperties(m)) {
		t.Error("all ten properties match: want a match")
	}
	m["p9"] = "1"
	if e.Match(message.EncodeProperties(m)) {
		t.Error("p9 differs: want no match")
	}
	if got := len(e.Properties()); got != 10 {
		t.Errorf("Properties() has %d names, want 10", got)
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	enc := message.EncodeProperties(props)
	for _, expr := range []string{
		"a > 5 AND s = 'abc'",
		"TAGS IN ('TagA','TagB','TagC','TagD','TagE') OR zz IS NULL",
		"f > 1.0 AND sp BETWEEN 2.0 AND 3",
		"x > 5",
		"s CONTAINS 'b' AND NOT (a < 3)",
	} {
		e, err := Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(200, func() { e.Match(enc) }); n != 0 {
			t.Errorf("Match(%q) allocates %v times per message", expr, n)
		}
	}
}

func TestParseJavaNumbers(t *testing.T) {
	ints := []struct {
		in    string
		int32 bool
		want  int64
		ok    bool
	}{
		{"0", true, 0, true}, {"-0", true, 0, true}, {"+12", true, 12, true}, {"007", true, 7, true},
		{"2147483647", true, 2147483647, true}, {"2147483648", true, 0, false}, {"-2147483648", true, -2147483648, true},
		{"-2147483649", true, 0, false}, {"2147483648", false, 2147483648, true},
		{"9223372036854775807", false, 9223372036854775807, true}, {"9223372036854775808", false, 0, false},
		{"-9223372036854775808", false, -9223372036854775808, true}, {"", true, 0, false}, {"-", true, 0, false},
		{" 1", true, 0, false}, {"1.0", true, 0, false}, {"1e3", false, 0, false}, {"١", true, 0, false},
	}
	for _, tt := range ints {
		got, ok := parseJavaInt([]byte(tt.in), tt.int32)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseJavaInt(%q, %v) = %d, %v; want %d, %v", tt.in, tt.int32, got, ok, tt.want, tt.ok)
		}
	}
	doubles := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1.5", 1.5, true}, {" 1.5\t", 1.5, true}, {"5.", 5, true}, {".5", .5, true}, {"-.5e1", -5, true},
		{"1e3", 1000, true}, {"1E+3", 1000, true}, {"1.5f", 1.5, true}, {"1.5D", 1.5, true}, {"0x1p3", 8, true},
		{"0x1.8P1", 3, true}, {"-Infinity", -1 / zero(), true}, {"1e400", 1 / zero(), true},
		{"", 0, false}, {".", 0, false}, {"e3", 0, false}, {"1e", 0, false}, {"0x1", 0, false}, {"1_000", 0, false},
		{"inf", 0, false}, {"Inf", 0, false}, {"infinity", 0, false}, {"1.5ff", 0, false}, {"nan", 0, false}, {"0x", 0, false},
	}
	for _, tt := range doubles {
		got, ok := parseJavaDouble([]byte(tt.in))
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseJavaDouble(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	if f, ok := parseJavaDouble([]byte("NaN")); !ok || f == f {
		t.Errorf("parseJavaDouble(NaN) = %v, %v", f, ok)
	}
}

func zero() float64 { return 0 }
