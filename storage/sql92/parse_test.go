package sql92

import (
	"errors"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		expr string
		col  int    // 1-based column of the error
		msg  string // substring of the message
	}{
		{"", 1, "empty expression"},
		{"  -- only a comment", 1, "empty expression"},
		{"a != 5", 3, "write <> for not-equal"},
		{"a == 5", 3, "write = for equal"},
		{"a + 1 > 2", 3, "found '+'"},
		{"a * 2 > 1", 3, "unexpected character '*'"},
		{`s = "abc"`, 5, "quoted with '"},
		{"my.prop = 1", 3, "unexpected character '.'"},
		{"a > '5'", 5, "'5' cannot be compared with >"},
		{"'5' < a", 1, "'5' cannot be compared with <"},
		{"a >= TRUE", 6, "TRUE cannot be compared"},
		{"a > (b = 1)", 5, "cannot be compared"},
		{"a > 1 > 2", 1, "cannot be compared"},
		{"a = NULL", 5, "write IS NULL"},
		{"NULL <> a", 1, "write IS NULL"},
		{"TRUE = 5", 1, "TRUE cannot be compared with 5"},
		{"a BETWEEN 20 AND 1", 11, "bounds are reversed"},
		{"a BETWEEN NULL AND 1", 11, "cannot be NULL"},
		{"a BETWEEN 1 OR 2", 13, "expected AND"},
		{"a BETWEEN 'x' AND 'y'", 11, "'x' cannot be compared"},
		{"a IN (10)", 7, "expected a string literal in the IN list"},
		{"a IN ()", 7, "expected a string literal"},
		{"a IN 'x'", 6, "expected '(' after IN"},
		{"a IN ('x' 'y')", 11, "expected ',' or ')'"},
		{"5 IN ('x')", 1, "IN needs a property"},
		{"a CONTAINS 5", 12, "expected a string literal after CONTAINS"},
		{"a NOT 5", 3, "NOT after a must be followed by BETWEEN"},
		{"a > 5 xyz", 7, "expected AND, OR or the end"},
		{"a = 10 b = 1", 8, "found property b"},
		{"s LIKE 'a%'", 3, "found property LIKE"},
		{"a > ", 5, "found the end of the expression"},
		{"(a > 5", 7, "expected ')' to close the '(' at column 1"},
		{"a > 5)", 6, "found ')'"},
		{"a IS 5", 6, "expected NULL after IS"},
		{"a IS NOT 5", 10, "expected NULL after IS NOT"},
		{"5", 1, "5 is not a condition"},
		{"'x'", 1, "'x' is not a condition"},
		{"-a", 1, "(-a) is not a condition"},
		{"a AND 5", 7, "5 is not a condition"},
		{"NOT 5", 5, "5 is not a condition"},
		{"a = 'x", 5, "never closed"},
		{"a = 1 /* x", 7, "never closed with */"},
		{"a > 9223372036854775808", 5, "out of range"},
		{"a > 1e400", 5, "out of range"},
		{"a = 0L", 6, "found property L"}, // as in Java, the l/L suffix is not allowed on 0
		{"a > 5 \x00", 7, `unexpected character '\x00'`},
		{"a > 5 é", 7, "unexpected character"},
		{strings.Repeat("(", 200) + "a" + strings.Repeat(")", 200), 101, "nested more than 100"},
		{strings.Repeat("NOT ", 200) + "a", 401, "nested more than 100"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.expr)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want a *ParseError", tt.expr, err)
			continue
		}
		if pe.Column() != tt.col || !strings.Contains(pe.Msg, tt.msg) {
			t.Errorf("Parse(%q): column %d %q; want column %d containing %q", tt.expr, pe.Column(), pe.Msg, tt.col, tt.msg)
		}
		if !strings.HasPrefix(err.Error(), "sql92: column ") {
			t.Errorf("Parse(%q).Error() = %q", tt.expr, err)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		expr  string
		canon string
	}{
		{"a > 5", "(a > 5)"},
		{"a>5", "(a > 5)"},
		{"A > 5 and B < 3 or C = 'x'", "(((A > 5) AND (B < 3)) OR (C = 'x'))"},
		{"a = 1 OR b = 2 AND c = 3", "((a = 1) OR ((b = 2) AND (c = 3)))"},
		{"(a = 1 OR b = 2) AND c = 3", "(((a = 1) OR (b = 2)) AND (c = 3))"},
		{"a <> 'x'", "(NOT (a = 'x'))"},
		{"a IS NOT NULL", "(NOT (a IS NULL))"},
		{"a BETWEEN 1 AND 2", "((a >= 1) AND (a <= 2))"},
		{"a NOT BETWEEN 1 AND 2", "((a < 1) OR (a > 2))"},
		{"a NOT IN ('x', 'it''s')", "(a NOT IN ('x', 'it''s'))"},
		{"a not contains 'q'", "(a NOT CONTAINS 'q')"},
		{"a StartsWith 'q' AND a ENDSWITH 'z'", "((a STARTSWITH 'q') AND (a ENDSWITH 'z'))"},
		{"NOT a", "(NOT a)"},
		{"a", "a"},
		{"TRUE", "TRUE"},
		{"null", "NULL"},
		{"a > -5", "(a > (-5))"},
		{"a > +5", "(a > 5)"},
		{"a > - - 5", "(a > (-(-5)))"},
		{"a > 5.5", "(a > 5.5e+00)"},
		{"a > .5", "(a > 5e-01)"},
		{"a > 5.", "(a > 5e+00)"},
		{"a > 5E2", "(a > 5e+02)"},
		{"a > 0.0", "(a > 0e+00)"},
		{"a > 5L", "(a > 5)"},
		{"a > 3000000000", "(a > 3000000000)"},
		{"a > 9223372036854775807", "(a > 9223372036854775807)"},
		{"a > 007.5", "(a > 7.5e+00)"},
		{"$x_1 = 'y'", "($x_1 = 'y')"},
		{"(((a))) = 1", "(a = 1)"},
		{"a = b", "(a = b)"},
		{"1 = TRUE", "(1 = TRUE)"},
		{"a BETWEEN 5 AND -5", "((a >= 5) AND (a <= (-5)))"}, // only literal bounds are checked
		{"a NOT BETWEEN 5 AND 1", "((a < 5) OR (a > 1))"},
		{"NOT a = 1", "((NOT a) = 1)"},
		{"a IS NULL = TRUE", "((a IS NULL) = TRUE)"},
		{"a = 1 -- comment\n AND b = 2", "((a = 1) AND (b = 2))"},
		{"a = 1 /* c */ AND /**/ b = 2", "((a = 1) AND (b = 2))"},
		{"a\t=\r\n1\f", "(a = 1)"},
		{"TAGS IN ('标签', 'b')", "(TAGS IN ('标签', 'b'))"},
		{"notes = 1 AND android = 2 AND order = 3", "(((notes = 1) AND (android = 2)) AND (order = 3))"},
	}
	for _, tt := range tests {
		e, err := Parse(tt.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.expr, err)
			continue
		}
		if got := e.String(); got != tt.canon {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.expr, got, tt.canon)
		}
		if e.Text() != tt.expr {
			t.Errorf("Text() = %q, want %q", e.Text(), tt.expr)
		}
		again, err := Parse(e.String())
		if err != nil || again.String() != e.String() {
			t.Errorf("round trip of %q: %q, %v", tt.expr, again, err)
		}
	}
}

func TestProperties(t *testing.T) {
	e, err := Parse("b = 1 AND a > 2 OR b < 3 AND TAGS IN ('x')")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.Properties(), ","); got != "b,a,TAGS" {
		t.Errorf("Properties() = %s, want b,a,TAGS", got)
	}
}
