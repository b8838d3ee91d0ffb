package remoting

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// ExtWriter writes a command's extFields straight into the frame being
// encoded, in place of the ExtFields map: a sender that builds many
// requests of one shape (the producer's sends) encodes them without a map,
// without formatting numbers into strings and without sorting keys. The
// entries go in the order WriteExt writes them; a key must not be written
// twice. Decoding never sets it: a received command has its fields in
// ExtFields.
type ExtWriter interface {
	// WriteExt writes every field with e's methods.
	WriteExt(e *ExtEncoder)
}

// ExtEncoder appends extFields entries in the header encoding of the frame
// under construction (see the package documentation for both layouts).
// Values are strings on the wire; Int writes the decimal text of a number.
type ExtEncoder struct {
	dst  []byte
	json bool
	n    int   // entries written
	err  error // the first field that does not fit its wire width
	// collect, when set, gathers the fields as strings instead of
	// encoding them: what a request signer needs of a command with an Ext
	// (see Client.wire).
	collect *Fields
}

// String writes the field key with value.
func (e *ExtEncoder) String(key, value string) {
	if e.collect != nil {
		*e.collect = append(*e.collect, Field{key, value})
		return
	}
	if e.sep(key) {
		if e.json {
			e.dst = appendJSONString(e.dst, value)
			return
		}
		e.dst = binary.BigEndian.AppendUint32(e.dst, uint32(len(value)))
		e.dst = append(e.dst, value...)
	}
}

// Bytes writes the field key with value as its text.
func (e *ExtEncoder) Bytes(key string, value []byte) {
	if e.collect != nil {
		*e.collect = append(*e.collect, Field{key, string(value)})
		return
	}
	if e.sep(key) {
		if e.json {
			e.dst = appendJSONText(e.dst, value)
			return
		}
		e.dst = binary.BigEndian.AppendUint32(e.dst, uint32(len(value)))
		e.dst = append(e.dst, value...)
	}
}

// Int writes the field key with the decimal text of v.
func (e *ExtEncoder) Int(key string, v int64) {
	if e.collect != nil {
		*e.collect = append(*e.collect, Field{key, strconv.FormatInt(v, 10)})
		return
	}
	if e.sep(key) {
		if e.json {
			e.dst = append(e.dst, '"')
			e.dst = strconv.AppendInt(e.dst, v, 10)
			e.dst = append(e.dst, '"')
			return
		}
		at := len(e.dst)
		e.dst = append(e.dst, 0, 0, 0, 0)
		e.dst = strconv.AppendInt(e.dst, v, 10)
		binary.BigEndian.PutUint32(e.dst[at:], uint32(len(e.dst)-at-4))
	}
}

// sep writes what precedes a value: the separator and the key. It returns
// false (and records the error) for a key too long for the binary layout.
func (e *ExtEncoder) sep(key string) bool {
	if e.err != nil {
		return false
	}
	if e.json {
		if e.n > 0 {
			e.dst = append(e.dst, ',')
		}
		e.dst = appendJSONString(e.dst, key)
		e.dst = append(e.dst, ':')
	} else {
		if len(key) > math.MaxInt16 {
			e.err = fmt.Errorf("remoting encode binary header: key of %d bytes: %w", len(key), ErrMalformed)
			return false
		}
		e.dst = binary.BigEndian.AppendUint16(e.dst, uint16(len(key)))
		e.dst = append(e.dst, key...)
	}
	e.n++
	return true
}
