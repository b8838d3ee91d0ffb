package meta

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Lenient readers of single JSON values, as fastjson reads a Java bean's
// fields: a number may come as a string ("" is 0) or a boolean, a boolean as
// a number (0/1) or a string ("true"/"false" in any case, "1"/"0", "Y"/"N",
// "T"/"F", "" = false), a string as any scalar's text. The JSON itself must
// be well-formed; null is handled by the caller.

func lenientInt64(raw json.RawMessage) (int64, error) { return lenientInt(raw, 64) }

func lenientInt32(raw json.RawMessage) (int32, error) {
	v, err := lenientInt(raw, 32)
	return int32(v), err
}

// lenientInt reads an integer of the given size; a fraction is dropped
// toward zero, a value out of range is an error.
func lenientInt(raw json.RawMessage, bits int) (int64, error) {
	text := string(raw)
	switch raw[0] {
	case 't':
		return 1, nil
	case 'f':
		return 0, nil
	case '{', '[':
		return 0, fmt.Errorf("cannot read %.20s as a number", raw)
	case '"':
		if err := json.Unmarshal(raw, &text); err != nil {
			return 0, err
		}
		if text = strings.TrimSpace(text); text == "" {
			return 0, nil
		}
	}
	if v, err := strconv.ParseInt(text, 10, bits); err == nil {
		return v, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	lim := math.Ldexp(1, bits-1)
	if err != nil || math.IsNaN(f) || math.Trunc(f) < -lim || math.Trunc(f) >= lim {
		return 0, fmt.Errorf("%q is not an int%d", text, bits)
	}
	return int64(math.Trunc(f)), nil
}

// lenientBool reads a boolean.
func lenientBool(raw json.RawMessage) (bool, error) {
	switch raw[0] {
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return false, err
		}
		switch {
		case strings.EqualFold(s, "true"), s == "1", s == "Y", s == "T":
			return true, nil
		case strings.EqualFold(s, "false"), s == "0", s == "N", s == "F", s == "":
			return false, nil
		}
		return false, fmt.Errorf("cannot read %q as a boolean", s)
	}
	switch string(raw) {
	case "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("cannot read %.20s as a boolean", raw)
}

// lenientString reads a string, or any other scalar as its JSON text.
func lenientString(raw json.RawMessage) (string, error) {
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case '{', '[':
		return "", fmt.Errorf("cannot read %.20s as a string", raw)
	}
	return string(raw), nil
}

// lenientStringMap reads an object of scalar values into *dst (replaced).
func lenientStringMap(raw json.RawMessage, dst *map[string]string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if string(v) == "null" {
			continue
		}
		s, err := lenientString(v)
		if err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
		out[k] = s
	}
	*dst = out
	return nil
}
