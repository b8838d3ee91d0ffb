package checkpoint

import "errors"

// Sentinel errors of the checkpoint and snapshot files; returned errors wrap
// them with the path involved.
var (
	// ErrCorrupt reports a checkpoint copy or snapshot that fails
	// validation (size, magic, version, counts or checksum).
	ErrCorrupt = errors.New("timer checkpoint: corrupt")
	// ErrClosed is returned by writes to a closed checkpoint file.
	ErrClosed = errors.New("timer checkpoint: closed")
)
