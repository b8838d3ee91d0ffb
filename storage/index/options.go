package index

import (
	"fmt"
	"math"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Defaults for new index files.
const (
	// DefaultSlots is the hash slots per file (2 MiB of slot table).
	DefaultSlots = 1 << 19
	// DefaultMaxEntries is the entries per file (64 MiB of entries), so that
	// chains average 4 entries in a full file.
	DefaultMaxEntries = 1 << 21
	// DefaultMaxScan bounds the entries one Lookup examines.
	DefaultMaxScan = 1 << 16
)

// Options configures Open. The zero value is valid. Slots and MaxEntries
// apply to files created from now on; each file records its own.
type Options struct {
	// Slots is the number of hash slots of a new file (default DefaultSlots).
	Slots int
	// MaxEntries is the number of entries a file holds before the index
	// rolls to a new file (default DefaultMaxEntries).
	MaxEntries int
	// MaxScan bounds the entries one Lookup walks through, whatever its
	// result cap (default DefaultMaxScan).
	MaxScan int
	// Logger receives recovery reports. The zero value discards.
	Logger zerolog.Logger

	// FS replaces the operating system's file system (storage.Store.FS:
	// fault injection and crash simulation in tests); nil means the real
	// one.
	FS vfs.FS
}

func (o Options) withDefaults() (Options, error) {
	if o.Slots == 0 {
		o.Slots = DefaultSlots
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxScan == 0 {
		o.MaxScan = DefaultMaxScan
	}
	if o.Slots < 1 || o.Slots > math.MaxInt32/slotSize {
		return o, fmt.Errorf("slots %d: %w", o.Slots, ErrInvalidOptions)
	}
	if o.MaxEntries < 1 || o.MaxEntries > math.MaxInt32-1 {
		return o, fmt.Errorf("max entries %d: %w", o.MaxEntries, ErrInvalidOptions)
	}
	if o.MaxScan < 1 {
		return o, fmt.Errorf("max scan %d: %w", o.MaxScan, ErrInvalidOptions)
	}
	if o.FS == nil {
		o.FS = vfs.OS{}
	}
	return o, nil
}
