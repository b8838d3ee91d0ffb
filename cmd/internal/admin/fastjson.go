package admin

import (
	"encoding/json"
	"errors"
	"fmt"
)

// maxDepth bounds the nesting Normalize accepts.
const maxDepth = 64

// errFastJSON marks a body Normalize cannot read.
var errFastJSON = errors.New("admin body is not JSON")

// Normalize rewrites a body written by Java's fastjson into standard JSON.
// fastjson writes the keys of maps whose keys are not strings by their own
// serializer, unquoted (facts 11.13): a MessageQueue key is an object
// (`{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}`) and a Long key a
// bare number (`{0:"1.2.3.4:10911"}`). Normalize turns every such key into
// a JSON string holding its compact text, so encoding/json can decode the
// map as map[string]V and the key be decoded on its own. Bodies that are
// already standard JSON (keys stringified, as the Go broker writes them)
// pass unchanged apart from insignificant whitespace.
func Normalize(b []byte) ([]byte, error) {
	p := &normalizer{in: b}
	p.ws()
	out, err := p.value(nil, 0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.pos != len(p.in) {
		return nil, p.fail("trailing data")
	}
	return out, nil
}

type normalizer struct {
	in  []byte
	pos int
}

func (p *normalizer) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", errFastJSON, what, p.pos)
}

func (p *normalizer) ws() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value appends the value at pos to out.
func (p *normalizer) value(out []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, p.fail("nesting too deep")
	}
	if p.pos >= len(p.in) {
		return nil, p.fail("unexpected end")
	}
	switch p.in[p.pos] {
	case '{':
		return p.object(out, depth)
	case '[':
		return p.array(out, depth)
	case '"':
		return p.str(out)
	}
	return p.bare(out)
}

// str copies a string token, escapes included.
func (p *normalizer) str(out []byte) ([]byte, error) {
	start := p.pos
	p.pos++
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case '\\':
			p.pos += 2
			continue
		case '"':
			p.pos++
			if !json.Valid(p.in[start:p.pos]) {
				return nil, p.fail("bad string")
			}
			return append(out, p.in[start:p.pos]...), nil
		}
		p.pos++
	}
	return nil, p.fail("unterminated string")
}

// bare copies a number or literal (true, false, null).
func (p *normalizer) bare(out []byte) ([]byte, error) {
	start := p.pos
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		if c == ',' || c == '}' || c == ']' || c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
		p.pos++
	}
	tok := p.in[start:p.pos]
	if len(tok) == 0 || !json.Valid(tok) {
		return nil, p.fail(fmt.Sprintf("bad token %q", tok))
	}
	return append(out, tok...), nil
}

func (p *normalizer) array(out []byte, depth int) ([]byte, error) {
	p.pos++ // [
	out = append(out, '[')
	p.ws()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		return append(out, ']'), nil
	}
	for {
		var err error
		p.ws()
		if out, err = p.value(out, depth+1); err != nil {
			return nil, err
		}
		p.ws()
		if p.pos >= len(p.in) {
			return nil, p.fail("unterminated array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			out = append(out, ',')
		case ']':
			p.pos++
			return append(out, ']'), nil
		default:
			return nil, p.fail("expected , or ]")
		}
	}
}

func (p *normalizer) object(out []byte, depth int) ([]byte, error) {
	p.pos++ // {
	out = append(out, '{')
	p.ws()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		return append(out, '}'), nil
	}
	for {
		var err error
		p.ws()
		if out, err = p.key(out, depth); err != nil {
			return nil, err
		}
		p.ws()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return nil, p.fail("expected :")
		}
		p.pos++
		out = append(out, ':')
		p.ws()
		if out, err = p.value(out, depth+1); err != nil {
			return nil, err
		}
		p.ws()
		if p.pos >= len(p.in) {
			return nil, p.fail("unterminated object")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			out = append(out, ',')
		case '}':
			p.pos++
			return append(out, '}'), nil
		default:
			return nil, p.fail("expected , or }")
		}
	}
}

// key appends an object key as a JSON string.
func (p *normalizer) key(out []byte, depth int) ([]byte, error) {
	if p.pos >= len(p.in) {
		return nil, p.fail("unexpected end")
	}
	if p.in[p.pos] == '"' {
		return p.str(out)
	}
	text, err := p.value(nil, depth+1)
	if err != nil {
		return nil, err
	}
	quoted, err := json.Marshal(string(text))
	if err != nil {
		return nil, p.fail("key")
	}
	return append(out, quoted...), nil
}
