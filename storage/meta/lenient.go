package meta

import (
	"encoding/json"
	"fmt"

	"github.com/wheelmq/wheelmq/storage/lenient"
)

// Lenient readers of single JSON values, as fastjson reads a Java bean's
// fields: the rules of package lenient, the one implementation wheelmq's
// headers and bodies use too. The JSON itself must be well-formed; null is
// handled by the caller (it keeps the field's default).

func lenientInt64(raw json.RawMessage) (int64, error) {
	v, _, err := lenient.ParseInt(raw, 64)
	return v, err
}

func lenientInt32(raw json.RawMessage) (int32, error) {
	v, _, err := lenient.ParseInt(raw, 32)
	return int32(v), err
}

// lenientBool reads a boolean.
func lenientBool(raw json.RawMessage) (bool, error) {
	v, _, err := lenient.ParseBool(raw)
	return v, err
}

// lenientString reads a string, or any other value as its JSON text.
func lenientString(raw json.RawMessage) (string, error) {
	s, _, err := lenient.ParseString(raw)
	return s, err
}

// lenientStringMap reads an object of values into *dst (replaced), each
// read as lenientString does; a null value leaves its key out.
func lenientStringMap(raw json.RawMessage, dst *map[string]string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, set, err := lenient.ParseString(v)
		if err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
		if set {
			out[k] = s
		}
	}
	*dst = out
	return nil
}
