package commitlog

import "errors"

// Errors returned by this package; test for them with errors.Is. Returned
// errors wrap these with the path or offset involved.
var (
	// ErrClosed is returned by every operation after Close.
	ErrClosed = errors.New("commitlog: closed")
	// ErrCorrupt means stored bytes failed verification (size, magic,
	// CRC32C or PHYSICALOFFSET), or the offset is not a record boundary.
	ErrCorrupt = errors.New("commitlog: corrupt entry")
	// ErrOutOfRange means the offset or size lies outside [MinOffset,
	// MaxOffset) or crosses a segment end.
	ErrOutOfRange = errors.New("commitlog: offset out of range")
	// ErrInvalidRecord means a record given to Append is malformed: shorter
	// than MinRecordSize, TOTALSIZE not equal to its length, or unknown magic.
	ErrInvalidRecord = errors.New("commitlog: invalid record")
	// ErrRecordTooLarge means a record plus its checksum exceeds SegmentSize.
	ErrRecordTooLarge = errors.New("commitlog: record larger than a segment")
	// ErrFailed means an earlier fsync or rollback failed; the log refuses
	// writes until it is reopened (CommitLog.Reopen, or a process restart).
	ErrFailed = errors.New("commitlog: failed, reopen to recover")
	// ErrInvalidOptions means Options failed validation.
	ErrInvalidOptions = errors.New("commitlog: invalid options")
	// ErrLayout means the segment files on disk do not form a contiguous
	// sequence aligned to SegmentSize (for example SegmentSize changed).
	ErrLayout = errors.New("commitlog: segment files do not match SegmentSize")
)
