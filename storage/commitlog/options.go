package commitlog

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

const (
	// DefaultSegmentSize is the logical size of a segment file (1 GiB, as in
	// RocketMQ).
	DefaultSegmentSize int64 = 1 << 30
	// MinSegmentSize is the smallest accepted SegmentSize.
	MinSegmentSize int64 = 256
)

// Options configures Open. The zero value is valid.
type Options struct {
	// SegmentSize is the logical size of each segment file in bytes.
	// Default DefaultSegmentSize; at least MinSegmentSize. It must match the
	// size the directory was written with.
	SegmentSize int64
	// Logger receives recovery warnings. The zero value discards.
	Logger zerolog.Logger
	// RecoverFrom says that everything below this global offset is known to
	// be good (for example the last checkpointed flushed offset); Open scans
	// from the start of the segment containing it to the end of the log.
	// Zero or negative: scan only the last segment (and the previous one when
	// the last is empty).
	RecoverFrom int64
	// FS replaces the operating system's file system (fault injection in
	// tests, see storage/vfs/vfstest); nil means the real one.
	FS vfs.FS
}

// withDefaults returns a copy of o with defaults filled in, or an error
// wrapping ErrInvalidOptions.
func (o Options) withDefaults() (Options, error) {
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.SegmentSize < MinSegmentSize {
		return o, fmt.Errorf("segment size %d below %d: %w", o.SegmentSize, MinSegmentSize, ErrInvalidOptions)
	}
	if o.FS == nil {
		o.FS = vfs.OS{}
	}
	return o, nil
}
