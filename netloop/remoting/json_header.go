package remoting

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// JSON header (serialize type 0).
//
// Encoding writes compact JSON with every field, in the order the Go client
// uses, extFields sorted by key so the output is deterministic:
//
//	{"code":34,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}
//
// Decoding is lenient the way the Java broker is (fastjson into
// RemotingCommand, rocketmq-facts 11.17), so that every client that works
// with a Java broker works here. The value rules are package lenient's
// (internal/lenient), the one implementation that bodies and storage/meta
// use too; this scanner finds the tokens without allocating and hands each
// value to lenient's token-level functions:
//
//   - extFields values may be strings, numbers, booleans, objects or arrays;
//     a non-string value is read as its JSON text (1 -> "1", true -> "true",
//     {"x":1} -> `{"x":1}`, as it appears in the input). null means absent:
//     the key is removed. Non-Java clients (ali-ons, rocketmq-client-cpp)
//     write numbers and booleans there.
//   - code, version, opaque and flag are integer fields: JSON numbers
//     (integral, or with a fraction that is dropped, as fastjson does),
//     strings holding a decimal integer ("" is 0, "7.0" is 7), or booleans
//     (true is 1); the value must fit in 32 bits.
//   - language is a name, or a LanguageCode ordinal (an integer literal:
//     9 -> "GO"; any other number, and ordinals outside the table ->
//     "OTHER"). remark may be any value, read like an extFields value.
//   - null leaves a field as it was; unknown fields are skipped whatever
//     they hold; field names match case-insensitively; remark and extFields
//     may be absent.
//
// The syntax itself must be standard JSON: fastjson's unquoted names,
// single quotes and trailing commas are refused (no client sends them).

// Field names of the JSON header. Matching is case-insensitive, as in
// encoding/json.
const (
	jsonFieldCode      = "code"
	jsonFieldLanguage  = "language"
	jsonFieldVersion   = "version"
	jsonFieldOpaque    = "opaque"
	jsonFieldFlag      = "flag"
	jsonFieldRemark    = "remark"
	jsonFieldExtFields = "extFields"
)

// jsonFields lists the header's field names for case-insensitive matching.
var jsonFields = [...]string{jsonFieldCode, jsonFieldLanguage, jsonFieldVersion, jsonFieldOpaque,
	jsonFieldFlag, jsonFieldRemark, jsonFieldExtFields}

// decodeJSONHeader parses a JSON header: an object whose known fields set
// the command, read leniently as described above, and whose other fields
// are ignored. A null value leaves a field at its zero value (extFields null
// clears the map). The result's ExtFields is never nil. Strings are copied,
// so header may be reused afterwards.
func decodeJSONHeader(header []byte) (*Command, error) {
	s := jsonScanner{b: header}
	c := &Command{}
	if err := s.header(c); err != nil {
		return nil, fmt.Errorf("remoting decode JSON header at offset %d: %w: %w", s.i, ErrMalformed, err)
	}
	if c.ExtFields == nil {
		c.ExtFields = map[string]string{}
	}
	return c, nil
}

// header reads the whole header object into c.
func (s *jsonScanner) header(c *Command) error {
	if !s.consume('{') {
		return errJSONSyntax
	}
	if !s.consume('}') {
		for {
			key, err := s.stringBytes()
			if err != nil {
				return errJSONSyntax
			}
			if !s.consume(':') {
				return errJSONSyntax
			}
			switch jsonFieldOf(key) {
			case jsonFieldCode:
				err = s.int32Value(&c.Code)
			case jsonFieldLanguage:
				err = s.languageValue(&c.Language)
			case jsonFieldVersion:
				err = s.int32Value(&c.Version)
			case jsonFieldOpaque:
				err = s.int32Value(&c.Opaque)
			case jsonFieldFlag:
				err = s.int32Value(&c.Flag)
			case jsonFieldRemark:
				var present bool
				var text string
				if text, present, err = s.textValue(1); present {
					c.Remark = text
				}
			case jsonFieldExtFields:
				err = s.extFields(&c.ExtFields)
			default:
				err = s.skip(1)
			}
			if err != nil {
				return err
			}
			if s.consume(',') {
				continue
			}
			if s.consume('}') {
				break
			}
			return errJSONSyntax
		}
	}
	s.ws()
	if s.i != len(s.b) {
		return errJSONSyntax
	}
	return nil
}

// jsonFieldOf returns the header field name key matches, or "".
func jsonFieldOf(key []byte) string {
	for _, f := range jsonFields { // exact matches first; the conversion does not allocate
		if string(key) == f {
			return f
		}
	}
	for _, f := range jsonFields {
		if bytes.EqualFold(key, []byte(f)) {
			return f
		}
	}
	return ""
}

// extFields reads the extFields value: null clears *dst; an object is
// merged into *dst, created when nil, so a repeated extFields key merges
// like encoding/json does. Values are read by textValue: strings as they
// are, other values as their JSON text, null removes the key.
func (s *jsonScanner) extFields(dst *map[string]string) error {
	if s.peek() != '{' {
		if s.null() {
			*dst = nil
			return nil
		}
		return errJSONType
	}
	s.i++
	if *dst == nil {
		*dst = make(map[string]string, 16)
	}
	if s.consume('}') {
		return nil
	}
	m := *dst
	for {
		key, err := s.stringText()
		if err != nil {
			return errJSONSyntax
		}
		if !s.consume(':') {
			return errJSONSyntax
		}
		v, present, err := s.textValue(2)
		if err != nil {
			return err
		}
		if present {
			m[key] = v
		} else {
			delete(m, key)
		}
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			return nil
		}
		return errJSONSyntax
	}
}

// appendJSONHeader appends c's header as compact JSON. It cannot fail:
// invalid UTF-8 in strings is replaced by U+FFFD, as encoding/json does.
func appendJSONHeader(dst []byte, c *Command) []byte {
	return appendJSONHeaderTo(dst, c, new(ExtEncoder))
}

// appendJSONHeaderTo is appendJSONHeader with e, which the caller reuses,
// writing c.Ext when set.
func appendJSONHeaderTo(dst []byte, c *Command, e *ExtEncoder) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	dst = append(dst, `,"language":`...)
	dst = appendJSONString(dst, c.Language)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	dst = append(dst, `,"remark":`...)
	dst = appendJSONString(dst, c.Remark)
	dst = append(dst, `,"extFields":{`...)
	if c.Ext != nil {
		*e = ExtEncoder{dst: dst, json: true}
		c.Ext.WriteExt(e) // JSON has no width limits: no error
		dst, e.dst = e.dst, nil
		return append(dst, "}}"...)
	}
	var stack [32]string
	for i, k := range sortedKeys(stack[:0], c.ExtFields) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendJSONString(dst, c.ExtFields[k])
	}
	return append(dst, "}}"...)
}

// sortedKeys appends m's keys to buf in sorted order.
func sortedKeys(buf []string, m map[string]string) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}

// hexDigits are the digits of \u00XX escapes.
const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a quoted JSON string. It escapes '"', '\'
// and control characters, and replaces invalid UTF-8 with U+FFFD; all other
// characters are written as they are.
func appendJSONString(dst []byte, s string) []byte { return appendJSONText(dst, s) }

// appendJSONText is appendJSONString for a string or a byte slice.
func appendJSONText[T string | []byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' && b < utf8.RuneSelf {
			i++
			continue
		}
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeRune([]byte(s[i:min(i+utf8.UTFMax, len(s))])) // at most 4 bytes: no allocation
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
