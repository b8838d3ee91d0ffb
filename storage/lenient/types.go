package lenient

import "fmt"

// The value types decode request bodies (heartbeats, broker registrations,
// admin bodies) with encoding/json by the package's rules; null leaves a
// field as it was.

// String is a string field (Java String): a string as it is, any other
// value as its JSON text.
type String string

// UnmarshalJSON implements json.Unmarshaler.
func (s *String) UnmarshalJSON(b []byte) error {
	v, set, err := ParseString(b)
	if err != nil {
		return fmt.Errorf("lenient string: %w", err)
	}
	if set {
		*s = String(v)
	}
	return nil
}

// Strings converts a slice of String to plain strings.
func Strings(in []String) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}

// Int32 is an int field (Java int/Integer).
type Int32 int32

// UnmarshalJSON implements json.Unmarshaler.
func (n *Int32) UnmarshalJSON(b []byte) error {
	v, set, err := ParseInt(b, 32)
	if err != nil {
		return fmt.Errorf("lenient int32: %w", err)
	}
	if set {
		*n = Int32(v)
	}
	return nil
}

// Int64 is a long field (Java long/Long).
type Int64 int64

// UnmarshalJSON implements json.Unmarshaler.
func (n *Int64) UnmarshalJSON(b []byte) error {
	v, set, err := ParseInt(b, 64)
	if err != nil {
		return fmt.Errorf("lenient int64: %w", err)
	}
	if set {
		*n = Int64(v)
	}
	return nil
}

// Bool is a boolean field (Java boolean/Boolean).
type Bool bool

// UnmarshalJSON implements json.Unmarshaler.
func (v *Bool) UnmarshalJSON(b []byte) error {
	x, set, err := ParseBool(b)
	if err != nil {
		return fmt.Errorf("lenient bool: %w", err)
	}
	if set {
		*v = Bool(x)
	}
	return nil
}

// Enum returns the name an enum field read as a String stands for:
// fastjson reads a Java enum from its name or from its ordinal, so a text
// that EnumOrdinal reads as an index into names (a JSON number, or a
// string of the same digits: String cannot tell them apart) is replaced by
// that name. Anything else is returned as it is (an unknown name).
func Enum(s String, names []string) string {
	if i, ok := EnumOrdinal([]byte(s), len(names)); ok {
		return names[i]
	}
	return string(s)
}
