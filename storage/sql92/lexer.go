package sql92

import (
	"fmt"
	"strings"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tString  // '...' literal, val holds the decoded text
	tDecimal // integer literal, text without the l/L suffix
	tFloat   // floating-point literal
	tLParen
	tRParen
	tComma
	tPlus
	tMinus
	tEq // =
	tNe // <>
	tGt // >
	tGe // >=
	tLt // <
	tLe // <=
	// Keywords (case-insensitive).
	tNot
	tAnd
	tOr
	tBetween
	tIn
	tTrue
	tFalse
	tNull
	tIs
	tContains
	tStartsWith
	tEndsWith
)

var keywords = map[string]tokKind{
	"NOT": tNot, "AND": tAnd, "OR": tOr, "BETWEEN": tBetween, "IN": tIn, "TRUE": tTrue,
	"FALSE": tFalse, "NULL": tNull, "IS": tIs, "CONTAINS": tContains, "STARTSWITH": tStartsWith,
	"ENDSWITH": tEndsWith,
}

var symbols = map[tokKind]string{
	tLParen: "'('", tRParen: "')'", tComma: "','", tPlus: "'+'", tMinus: "'-'", tEq: "'='",
	tNe: "'<>'", tGt: "'>'", tGe: "'>='", tLt: "'<'", tLe: "'<='",
}

// token is one lexical token of the expression.
type token struct {
	kind tokKind
	pos  int    // byte offset of its first character
	text string // source text (for identifiers and numbers)
	val  string // decoded value of a string literal
}

// describe names the token for an error message.
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "the end of the expression"
	case tIdent:
		return "property " + t.text
	case tString:
		return "string " + quote(t.val)
	case tDecimal, tFloat:
		return "number " + t.text
	}
	if s, ok := symbols[t.kind]; ok {
		return s
	}
	return strings.ToUpper(t.text)
}

// lexer splits the expression into tokens. Whitespace is ' ', \t, \n, \r
// and \f; comments are "--" to the end of the line and "/* ... */".
type lexer struct {
	src string
	pos int
}

func (l *lexer) errorf(pos int, format string, args ...any) *ParseError {
	return &ParseError{Text: l.src, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// next returns the next token.
func (l *lexer) next() (token, *ParseError) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	s, start := l.src, l.pos
	if start >= len(s) {
		return token{kind: tEOF, pos: start}, nil
	}
	c := s[start]
	switch {
	case isIdentStart(c):
		end := start + 1
		for end < len(s) && isIdentPart(s[end]) {
			end++
		}
		l.pos = end
		word := s[start:end]
		if k, ok := keywords[strings.ToUpper(word)]; ok {
			return token{kind: k, pos: start, text: word}, nil
		}
		return token{kind: tIdent, pos: start, text: word}, nil
	case isDigit(c) || (c == '.' && start+1 < len(s) && isDigit(s[start+1])):
		return l.number()
	case c == '\'':
		return l.str()
	}
	l.pos = start + 1
	two := ""
	if start+2 <= len(s) {
		two = s[start : start+2]
	}
	switch {
	case two == "<>":
		l.pos++
		return token{kind: tNe, pos: start}, nil
	case two == ">=":
		l.pos++
		return token{kind: tGe, pos: start}, nil
	case two == "<=":
		l.pos++
		return token{kind: tLe, pos: start}, nil
	case two == "!=":
		return token{}, l.errorf(start, "unexpected '!=': write <> for not-equal")
	case two == "==":
		return token{}, l.errorf(start, "unexpected '==': write = for equal")
	}
	switch c {
	case '(':
		return token{kind: tLParen, pos: start}, nil
	case ')':
		return token{kind: tRParen, pos: start}, nil
	case ',':
		return token{kind: tComma, pos: start}, nil
	case '+':
		return token{kind: tPlus, pos: start}, nil
	case '-':
		return token{kind: tMinus, pos: start}, nil
	case '=':
		return token{kind: tEq, pos: start}, nil
	case '>':
		return token{kind: tGt, pos: start}, nil
	case '<':
		return token{kind: tLt, pos: start}, nil
	case '"':
		return token{}, l.errorf(start, "unexpected '\"': string literals are quoted with ' (write 'abc')")
	}
	if c < 0x20 || c >= 0x7f {
		return token{}, l.errorf(start, "unexpected character %q", rune(c))
	}
	return token{}, l.errorf(start, "unexpected character '%c'", c)
}

// skipSpace skips whitespace and comments.
func (l *lexer) skipSpace() *ParseError {
	s := l.src
	for l.pos < len(s) {
		switch c := s[l.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			l.pos++
		case strings.HasPrefix(s[l.pos:], "--"):
			end := strings.IndexAny(s[l.pos:], "\n\r")
			if end < 0 {
				l.pos = len(s)
			} else {
				l.pos += end
			}
		case strings.HasPrefix(s[l.pos:], "/*"):
			end := strings.Index(s[l.pos+2:], "*/")
			if end < 0 {
				return l.errorf(l.pos, "comment /* is never closed with */")
			}
			l.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

// number lexes RocketMQ's numeric literals: decimal integers ("0" or a
// digit 1-9 followed by digits, optional l/L suffix) and floats (5.5, 5.,
// .5, 5E10, 5.5e-3), longest match first like the Java token manager.
func (l *lexer) number() (token, *ParseError) {
	s, start := l.src, l.pos
	i := start
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	isFloat := false
	if i < len(s) && s[i] == '.' {
		isFloat = true
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if e := exponentLen(s[i:]); e > 0 {
		isFloat = true
		i += e
	}
	if isFloat {
		l.pos = i
		return token{kind: tFloat, pos: start, text: s[start:i]}, nil
	}
	if s[start] == '0' {
		// "0" is a whole token: "07" lexes as 0 then 7, as in Java.
		l.pos = start + 1
		return token{kind: tDecimal, pos: start, text: "0"}, nil
	}
	l.pos = i
	if i < len(s) && (s[i] == 'l' || s[i] == 'L') {
		l.pos++
	}
	return token{kind: tDecimal, pos: start, text: s[start:i]}, nil
}

// exponentLen returns the length of an exponent (e, optional sign, digits)
// at the start of s, or 0.
func exponentLen(s string) int {
	if len(s) < 2 || (s[0] != 'e' && s[0] != 'E') {
		return 0
	}
	i := 1
	if s[i] == '+' || s[i] == '-' {
		i++
	}
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j == i {
		return 0
	}
	return j
}

// str lexes a '...' literal in which ” stands for one quote.
func (l *lexer) str() (token, *ParseError) {
	s, start := l.src, l.pos
	var b strings.Builder
	i := start + 1
	for {
		j := strings.IndexByte(s[i:], '\'')
		if j < 0 {
			return token{}, l.errorf(start, "string literal is never closed with '")
		}
		b.WriteString(s[i : i+j])
		i += j + 1
		if i < len(s) && s[i] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		break
	}
	l.pos = i
	return token{kind: tString, pos: start, text: s[start:i], val: b.String()}, nil
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c == '$' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// quote renders s as a string literal: 'it”s'.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
