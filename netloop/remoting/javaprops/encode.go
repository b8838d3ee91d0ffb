package javaprops

import (
	"slices"
	"strings"
	"unicode/utf16"
)

// Encode writes m as properties text: one "key=value\n" line per entry,
// sorted by key (MixAll.properties2String with sorting, as
// GET_BROKER_CONFIG answers), escaped as the package documentation says.
// An empty map gives empty text.
func Encode(m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		escapeTo(&b, k, true)
		b.WriteByte('=')
		escapeTo(&b, m[k], false)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// escapeTo writes s escaped for a key (separators and comment marks
// escaped too) or for a value (only what load would misread).
func escapeTo(b *strings.Builder, s string, key bool) {
	leading := true // still in the value's leading blanks
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == ' ' && (key || leading):
			b.WriteString(`\ `)
		case key && (r == '=' || r == ':' || r == '#' || r == '!'):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r > 0x7e:
			writeUnicode(b, r)
		default:
			b.WriteRune(r)
		}
		if r != ' ' {
			leading = false
		}
	}
}

// writeUnicode writes r as \uXXXX, a UTF-16 surrogate pair for runes
// beyond the Basic Multilingual Plane (as Java writes them).
func writeUnicode(b *strings.Builder, r rune) {
	const hex = "0123456789abcdef"
	one := func(u rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hex[(u>>shift)&0xf])
		}
	}
	if r > 0xffff {
		hi, lo := utf16.EncodeRune(r)
		one(hi)
		one(lo)
		return
	}
	one(r)
}
