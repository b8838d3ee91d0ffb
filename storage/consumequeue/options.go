package consumequeue

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// DefaultUnitsPerFile is the number of units per file (RocketMQ's default,
// 6,000,000 bytes).
const DefaultUnitsPerFile = 300_000

// Options configures Open. The zero value is valid.
type Options struct {
	// UnitsPerFile is the number of 20-byte units in each file. Default
	// DefaultUnitsPerFile. It must match what the directory was written with.
	UnitsPerFile int
	// Logger receives recovery warnings. The zero value discards.
	Logger zerolog.Logger
	// FS replaces the operating system's file system (fault injection in
	// tests, see storage/vfs/vfstest); nil means the real one.
	FS vfs.FS
}

// withDefaults returns a copy of o with defaults filled in, or an error
// wrapping ErrInvalidOptions.
func (o Options) withDefaults() (Options, error) {
	if o.UnitsPerFile == 0 {
		o.UnitsPerFile = DefaultUnitsPerFile
	}
	if o.UnitsPerFile < 1 {
		return o, fmt.Errorf("units per file %d: %w", o.UnitsPerFile, ErrInvalidOptions)
	}
	if o.FS == nil {
		o.FS = vfs.OS{}
	}
	return o, nil
}
