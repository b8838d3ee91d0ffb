package sql92

import (
	"fmt"
	"unicode/utf8"
)

// ParseError reports why an expression does not compile: where (Pos, a byte
// offset into Text; Column, the 1-based character column) and what was
// expected there. Parse returns it as *ParseError.
type ParseError struct {
	// Text is the whole expression.
	Text string
	// Pos is the byte offset of the offending token (len(Text) at the end).
	Pos int
	// Msg says what was expected and what was found.
	Msg string
}

// Column is the 1-based character column of Pos.
func (e *ParseError) Column() int {
	if e.Pos > len(e.Text) {
		return utf8.RuneCountInString(e.Text) + 1
	}
	return utf8.RuneCountInString(e.Text[:e.Pos]) + 1
}

// Error implements error: `sql92: column 5 of "a > AND b": expected a value
// after '>', found AND`.
func (e *ParseError) Error() string {
	text := e.Text
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	return fmt.Sprintf("sql92: column %d of %q: %s", e.Column(), text, e.Msg)
}
