package javaprops

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax reports properties text that java.util.Properties would
// refuse too (a malformed \uXXXX escape) or that is not text.
var ErrSyntax = errors.New("javaprops: syntax error")

// LineError is a syntax error and the line it is on.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Entry is one key/value pair of properties text.
type Entry struct {
	Key, Value string
	// Line is the 1-based line where the entry starts (a value continued
	// over several lines reports its first line).
	Line int
}

// Parse reads Java properties text as java.util.Properties.load
// does: one entry per logical line, the key ending at the first unescaped
// '=', ':' or white space (white space around the separator is dropped),
// lines whose first non-blank character is '#' or '!' are comments, a line
// ending in an odd number of backslashes continues on the next one (whose
// leading white space is dropped), and the escapes \t \n \r \f \uXXXX and
// backslash-anything (the character itself) are decoded. Lines end with
// \n, \r or \r\n. Unlike Java, the bytes are read as UTF-8 rather than
// ISO-8859-1, and invalid UTF-8 is an error. Entries are returned in text
// order; a key given twice appears twice (the last one wins in Java).
// Parse stops at the first bad line, returning the entries before it and
// a *LineError; ParseAll reads on.
func Parse(data []byte) ([]Entry, error) {
	entries, errs := ParseAll(data)
	if len(errs) > 0 {
		first := errs[0]
		var out []Entry
		for _, e := range entries {
			if e.Line < first.Line {
				out = append(out, e)
			}
		}
		return out, first
	}
	return entries, nil
}

// ParseAll is Parse reading past bad lines: it returns every good entry
// and one *LineError per bad logical line (a line that is not UTF-8
// text, or holds a malformed escape), each with its exact line number, in
// text order.
func ParseAll(data []byte) ([]Entry, []*LineError) {
	var out []Entry
	var errs []*LineError
	lr := lineReader{data: data}
	for {
		logical, line, ok := lr.next()
		if !ok {
			return out, errs
		}
		if lr.badUTF8 != 0 {
			errs = append(errs, &LineError{Line: lr.badUTF8, Err: fmt.Errorf("not UTF-8 text (a byte %s): %w", lr.badByte, ErrSyntax)})
			continue
		}
		key, value := splitKeyValue(logical)
		k, err := unescape(key)
		if err != nil {
			errs = append(errs, &LineError{Line: line, Err: fmt.Errorf("key: %w", err)})
			continue
		}
		v, err := unescape(value)
		if err != nil {
			errs = append(errs, &LineError{Line: line, Err: fmt.Errorf("value of %s: %w", k, err)})
			continue
		}
		out = append(out, Entry{Key: k, Value: v, Line: line})
	}
}

// lineReader splits text into logical lines.
type lineReader struct {
	data []byte
	pos  int
	line int // natural lines consumed
	// badUTF8 is the first natural line of the logical line last returned
	// by next that is not UTF-8 text (0: none), badByte the first bad byte.
	badUTF8 int
	badByte string
}

// natural returns the next natural line without its terminator.
func (r *lineReader) natural() ([]byte, bool) {
	if r.pos >= len(r.data) {
		return nil, false
	}
	rest := r.data[r.pos:]
	i := bytes.IndexAny(rest, "\r\n")
	r.line++
	if i < 0 {
		r.pos = len(r.data)
		r.checkUTF8(rest)
		return rest, true
	}
	r.pos += i + 1
	if rest[i] == '\r' && i+1 < len(rest) && rest[i+1] == '\n' {
		r.pos++
	}
	r.checkUTF8(rest[:i])
	return rest[:i], true
}

// checkUTF8 records the current natural line when it is not UTF-8 text.
func (r *lineReader) checkUTF8(b []byte) {
	if r.badUTF8 != 0 || utf8.Valid(b) {
		return
	}
	for i := 0; i < len(b); {
		c, size := utf8.DecodeRune(b[i:])
		if c == utf8.RuneError && size <= 1 {
			r.badUTF8, r.badByte = r.line, fmt.Sprintf("%#02x at column %d", b[i], i+1)
			return
		}
		i += size
	}
}

// next returns the next logical line (comments and blank lines skipped,
// continuations joined, leading blanks dropped) and the line it starts on.
func (r *lineReader) next() ([]byte, int, bool) {
	for {
		r.badUTF8, r.badByte = 0, ""
		nat, ok := r.natural()
		if !ok {
			return nil, 0, false
		}
		nat = trimLeftBlank(nat)
		if len(nat) == 0 || nat[0] == '#' || nat[0] == '!' {
			continue
		}
		start := r.line
		if !continues(nat) {
			return nat, start, true
		}
		logical := append([]byte(nil), nat[:len(nat)-1]...)
		for {
			more, ok := r.natural()
			if !ok {
				return logical, start, true
			}
			more = trimLeftBlank(more)
			if !continues(more) {
				return append(logical, more...), start, true
			}
			logical = append(logical, more[:len(more)-1]...)
		}
	}
}

// continues reports whether a line ends in an odd number of backslashes.
func continues(b []byte) bool {
	n := 0
	for i := len(b) - 1; i >= 0 && b[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftBlank(b []byte) []byte {
	for len(b) > 0 && isBlank(b[0]) {
		b = b[1:]
	}
	return b
}

// splitKeyValue splits a logical line at the first unescaped separator:
// '=' or ':', or white space optionally followed by one of them.
func splitKeyValue(l []byte) (key, value []byte) {
	escaped := false
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '=' || c == ':':
			return l[:i], trimLeftBlank(l[i+1:])
		case isBlank(c):
			rest := trimLeftBlank(l[i+1:])
			if len(rest) > 0 && (rest[0] == '=' || rest[0] == ':') {
				rest = trimLeftBlank(rest[1:])
			}
			return l[:i], rest
		}
	}
	return l, nil
}

// unescape decodes the escapes of a key or value.
func unescape(b []byte) (string, error) {
	if bytes.IndexByte(b, '\\') < 0 {
		return string(b), nil
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i == len(b) {
			break // a lone trailing backslash (end of a continued file) means nothing
		}
		switch c = b[i]; c {
		case 't':
			out = append(out, '\t')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 'f':
			out = append(out, '\f')
		case 'u':
			r, err := hex4(b, i+1)
			if err != nil {
				return "", err
			}
			i += 4
			// A UTF-16 surrogate pair is two escapes, as Java writes it.
			if utf16.IsSurrogate(r) && i+6 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
				if lo, err := hex4(b, i+3); err == nil {
					if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
						r = pair
						i += 6
					}
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			// Backslash before any other character (including a
			// multi-byte one) stands for that character.
			out = append(out, c)
		}
	}
	return string(out), nil
}

// hex4 reads the 4 hex digits of a \u escape starting at b[at].
func hex4(b []byte, at int) (rune, error) {
	if at+4 > len(b) {
		return 0, fmt.Errorf("malformed \\uXXXX escape (fewer than 4 hex digits): %w", ErrSyntax)
	}
	var r rune
	for _, h := range b[at : at+4] {
		d, ok := hexDigit(h)
		if !ok {
			return 0, fmt.Errorf("malformed \\uXXXX escape %q: %w", b[at-2:at+4], ErrSyntax)
		}
		r = r<<4 | rune(d)
	}
	return r, nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
