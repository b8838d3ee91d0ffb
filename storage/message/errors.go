package message

import (
	"errors"
	"fmt"
)

// Errors returned by this package, wrapped with context; test with errors.Is.
var (
	// ErrTruncated means the input ends before the record (or batch entry)
	// it starts is complete. At the tail of a log it marks a torn write.
	ErrTruncated = errors.New("message: truncated input")
	// ErrCorrupt means the bytes are not a well-formed record: unknown magic,
	// lengths that disagree with TOTALSIZE, a port out of range, ...
	ErrCorrupt = errors.New("message: corrupt record")
	// ErrBodyCRC means a record's BODYCRC does not match its body. It wraps
	// ErrCorrupt, so errors.Is(err, ErrCorrupt) also holds.
	ErrBodyCRC = fmt.Errorf("%w: body crc mismatch", ErrCorrupt)
	// ErrBlank means the bytes hold the blank record that pads the end of a
	// CommitLog file (MagicBlank); Decode still reports its TOTALSIZE.
	ErrBlank = errors.New("message: blank end-of-file record")
	// ErrInvalid means a Record cannot be encoded: empty topic, topic longer
	// than 127 bytes, properties longer than 32767 bytes, body too large.
	ErrInvalid = errors.New("message: invalid record")
	// ErrBadMsgID means a string is not a well-formed offset message id.
	ErrBadMsgID = errors.New("message: malformed message id")
	// ErrBadBatch means a SEND_BATCH_MESSAGE body is malformed.
	ErrBadBatch = errors.New("message: malformed batch body")
)
