package sql92

import (
	"testing"

	"github.com/wheelmq/wheelmq/storage/message"
)

// FuzzParse checks that Parse never panics, that a compiled expression's
// canonical form parses to the same canonical form and evaluates the same,
// and that evaluation never panics on arbitrary property bytes.
func FuzzParse(f *testing.F) {
	enc := message.EncodeProperties(props)
	for _, s := range []string{
		"a > 5", "a = 10 AND s = 'abc'", "TAGS IN ('TagA', 'TagB')", "a BETWEEN 1 AND 20",
		"a NOT BETWEEN -5 AND +5.5e3", "s IS NOT NULL OR NOT (b = TRUE)", "x CONTAINS 'y'",
		"s NOT STARTSWITH 'a' AND s ENDSWITH 'c'", "a <> 'it''s' -- c\n", "/* c */ NULL", "f > .5",
		"a IN ('a','b','c','d','e','f')", "NOT a = 1", "a = b", "((a))", "big > 3000000000L",
		"a != 1", "a > '5'", "", "(", "'", "a IN (", "a BETWEEN 2 AND 1", "9223372036854775808 = a",
	} {
		f.Add(s, enc)
	}
	f.Add("k = 'v'", []byte("k\x01v\x02k\x01w"))
	f.Fuzz(func(t *testing.T, text string, raw []byte) {
		e, err := Parse(text)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("Parse(%q) returned %T, want *ParseError", text, err)
			}
			return
		}
		canon := e.String()
		e2, err := Parse(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, text, err)
		}
		if again := e2.String(); again != canon {
			t.Fatalf("canonical form not stable: %q -> %q -> %q", text, canon, again)
		}
		for _, p := range [][]byte{raw, enc} {
			if r1, r2 := e.Eval(p), e2.Eval(p); r1 != r2 {
				t.Fatalf("%q = %v but its canonical form %q = %v on %q", text, r1, canon, r2, p)
			}
		}
		if r1, r2 := e.Eval(enc), e.EvalMap(props); r1 != r2 {
			t.Fatalf("%q: encoded properties give %v, the map %v", text, r1, r2)
		}
	})
}
