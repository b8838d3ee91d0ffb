package adminbody

import (
	"encoding/json"
	"errors"
	"fmt"
)

// maxDepth bounds nesting, so that hostile input cannot exhaust the stack.
const maxDepth = 64

var errSyntax = errors.New("adminbody: malformed body")

// member is one key/value of an object, both as raw JSON-like text: a key
// is a string or, in fastjson's map form, any value (an object).
type member struct{ key, val []byte }

// scanner splits fastjson text into values without interpreting them. It
// accepts standard JSON plus values in key position.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value skips one value and returns its text.
func (s *scanner) value(depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", errSyntax, maxDepth)
	}
	s.ws()
	if s.i >= len(s.b) {
		return nil, fmt.Errorf("%w: unexpected end", errSyntax)
	}
	start := s.i
	switch c := s.b[s.i]; {
	case c == '{':
		if _, err := s.members(depth); err != nil {
			return nil, err
		}
	case c == '[':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			break
		}
		for {
			if _, err := s.value(depth + 1); err != nil {
				return nil, err
			}
			s.ws()
			if s.i >= len(s.b) {
				return nil, fmt.Errorf("%w: unterminated array", errSyntax)
			}
			s.i++
			if s.b[s.i-1] == ']' {
				break
			}
			if s.b[s.i-1] != ',' {
				return nil, fmt.Errorf("%w: want , or ] at %d", errSyntax, s.i-1)
			}
		}
	case c == '"':
		s.i++
		for s.i < len(s.b) && s.b[s.i] != '"' {
			if s.b[s.i] == '\\' {
				s.i++
			}
			s.i++
		}
		if s.i >= len(s.b) {
			return nil, fmt.Errorf("%w: unterminated string", errSyntax)
		}
		s.i++
	default:
		for s.i < len(s.b) && !isDelim(s.b[s.i]) {
			s.i++
		}
		if s.i == start {
			return nil, fmt.Errorf("%w: unexpected %q at %d", errSyntax, c, start)
		}
	}
	return s.b[start:s.i], nil
}

func isDelim(c byte) bool {
	switch c {
	case ',', ':', '}', ']', '{', '[', '"', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// members reads an object at the current position.
func (s *scanner) members(depth int) ([]member, error) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil, fmt.Errorf("%w: want an object", errSyntax)
	}
	s.i++
	var out []member
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return out, nil
	}
	for {
		k, err := s.value(depth + 1)
		if err != nil {
			return nil, err
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return nil, fmt.Errorf("%w: want : at %d", errSyntax, s.i)
		}
		s.i++
		v, err := s.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, member{k, v})
		s.ws()
		if s.i >= len(s.b) {
			return nil, fmt.Errorf("%w: unterminated object", errSyntax)
		}
		s.i++
		if s.b[s.i-1] == '}' {
			return out, nil
		}
		if s.b[s.i-1] != ',' {
			return nil, fmt.Errorf("%w: want , or } at %d", errSyntax, s.i-1)
		}
	}
}

// topMembers reads a whole body that must be one object, keyed by plain
// strings, and returns its members by name.
func topMembers(body []byte) (map[string][]byte, error) {
	s := scanner{b: body}
	ms, err := s.members(0)
	if err != nil {
		return nil, err
	}
	s.ws()
	if s.i != len(s.b) {
		return nil, fmt.Errorf("%w: text after the object at %d", errSyntax, s.i)
	}
	out := make(map[string][]byte, len(ms))
	for _, m := range ms {
		var name string
		if err := json.Unmarshal(m.key, &name); err != nil {
			return nil, fmt.Errorf("%w: key %.40q: %v", errSyntax, m.key, err)
		}
		out[name] = m.val
	}
	return out, nil
}

// DecodeQueueMap reads a map keyed by MessageQueue in any form Java's
// fastjson reads: the key object in key position (fastjson's own output, any
// white space) or a string holding the queue's JSON. Values are standard
// JSON decoded into V.
func DecodeQueueMap[V any](raw []byte) (map[MessageQueue]V, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	s := scanner{b: raw}
	ms, err := s.members(0)
	if err != nil {
		return nil, err
	}
	s.ws()
	if s.i != len(s.b) {
		return nil, fmt.Errorf("%w: text after the map at %d", errSyntax, s.i)
	}
	out := make(map[MessageQueue]V, len(ms))
	for _, m := range ms {
		key := m.key
		if key[0] == '"' {
			var text string
			if err := json.Unmarshal(key, &text); err != nil {
				return nil, fmt.Errorf("%w: key %.40q: %v", errSyntax, key, err)
			}
			key = []byte(text)
		}
		var q MessageQueue
		if err := json.Unmarshal(key, &q); err != nil {
			return nil, fmt.Errorf("adminbody: queue key %.60q: %w", key, err)
		}
		var v V
		if err := json.Unmarshal(m.val, &v); err != nil {
			return nil, fmt.Errorf("adminbody: value of %+v: %w", q, err)
		}
		out[q] = v
	}
	return out, nil
}
