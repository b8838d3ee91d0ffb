package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"sync"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Checkpoint file format constants (see the package doc). Frozen: changing
// them makes existing files unreadable.
const (
	// CheckpointMagic starts every checkpoint file ("WMCP").
	CheckpointMagic uint32 = 0x574D4350
	// CheckpointVersion is the layout version this build writes.
	CheckpointVersion uint16 = 1
	// MaxCheckpointName is the longest entry name.
	MaxCheckpointName = 64

	cpHeaderSize = 12
	cpCRCSize    = 4
	cpEntryFixed = 1 + 8
)

// Well-known checkpoint entry names. Any name matching [A-Za-z0-9._-]{1,64}
// may be used.
const (
	// CPCommitLogFlushed is the CommitLog offset known to be fsynced.
	CPCommitLogFlushed = "commitlog.flushed"
	// CPDispatchOffset is the CommitLog offset dispatched to consume queues.
	CPDispatchOffset = "consumequeue.dispatched"
	// CPTimerQueueOffset is the timer topic's consume-queue offset already
	// enqueued into the timer wheel.
	CPTimerQueueOffset = "timer.queue_offset"
	// CPTimerReadTimeMs is the time (ms) up to which the timer wheel was read.
	CPTimerReadTimeMs = "timer.read_time_ms"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checkpoint is a set of named int64 positions persisted together.
type Checkpoint struct {
	// Values maps an entry name to its position.
	Values map[string]int64
}

// Get returns the value of name.
func (c Checkpoint) Get(name string) (int64, bool) {
	v, ok := c.Values[name]
	return v, ok
}

// Set stores value under name, allocating Values if needed.
func (c *Checkpoint) Set(name string, value int64) {
	if c.Values == nil {
		c.Values = make(map[string]int64)
	}
	c.Values[name] = value
}

// validName reports whether name can be stored in a checkpoint.
func validName(name string) bool {
	if len(name) == 0 || len(name) > MaxCheckpointName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// EncodeCheckpoint returns the binary form of c (entries sorted by name).
// It fails with ErrInvalidName for a name outside [A-Za-z0-9._-]{1,64}.
func EncodeCheckpoint(c Checkpoint) ([]byte, error) {
	names := slices.Sorted(maps.Keys(c.Values))
	size := cpHeaderSize + cpCRCSize
	for _, n := range names {
		if !validName(n) {
			return nil, fmt.Errorf("checkpoint entry %q: %w", n, ErrInvalidName)
		}
		size += cpEntryFixed + len(n)
	}
	be := binary.BigEndian
	b := make([]byte, 0, size)
	b = be.AppendUint32(b, CheckpointMagic)
	b = be.AppendUint16(b, CheckpointVersion)
	b = be.AppendUint16(b, 0) // flags
	b = be.AppendUint32(b, uint32(len(names)))
	for _, n := range names {
		b = append(b, byte(len(n)))
		b = append(b, n...)
		b = be.AppendUint64(b, uint64(c.Values[n]))
	}
	return be.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// DecodeCheckpoint parses a checkpoint file image. Any damage (length, CRC,
// magic, flags, counts, names out of order or invalid, trailing bytes) wraps
// ErrCorrupt; a version other than CheckpointVersion wraps ErrVersion.
func DecodeCheckpoint(b []byte) (Checkpoint, error) {
	be := binary.BigEndian
	if len(b) < cpHeaderSize+cpCRCSize {
		return Checkpoint{}, fmt.Errorf("checkpoint: %d bytes, need at least %d: %w", len(b), cpHeaderSize+cpCRCSize, ErrCorrupt)
	}
	body, sum := b[:len(b)-cpCRCSize], be.Uint32(b[len(b)-cpCRCSize:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return Checkpoint{}, fmt.Errorf("checkpoint: crc32c %#08x, stored %#08x: %w", got, sum, ErrCorrupt)
	}
	if m := be.Uint32(body); m != CheckpointMagic {
		return Checkpoint{}, fmt.Errorf("checkpoint: magic %#08x: %w", m, ErrCorrupt)
	}
	if v := be.Uint16(body[4:]); v != CheckpointVersion {
		return Checkpoint{}, fmt.Errorf("checkpoint: version %d, this build reads %d: %w", v, CheckpointVersion, ErrVersion)
	}
	if f := be.Uint16(body[6:]); f != 0 {
		return Checkpoint{}, fmt.Errorf("checkpoint: unknown flags %#04x: %w", f, ErrCorrupt)
	}
	count := be.Uint32(body[8:])
	rest := body[cpHeaderSize:]
	if uint64(count)*(cpEntryFixed+1) > uint64(len(rest)) {
		return Checkpoint{}, fmt.Errorf("checkpoint: %d entries cannot fit in %d bytes: %w", count, len(rest), ErrCorrupt)
	}
	c := Checkpoint{Values: make(map[string]int64, count)}
	prev := ""
	for i := range count {
		if len(rest) < 1 {
			return Checkpoint{}, fmt.Errorf("checkpoint: entry %d truncated: %w", i, ErrCorrupt)
		}
		n := int(rest[0])
		if len(rest) < 1+n+8 {
			return Checkpoint{}, fmt.Errorf("checkpoint: entry %d truncated: %w", i, ErrCorrupt)
		}
		name := string(rest[1 : 1+n])
		if !validName(name) || (i > 0 && name <= prev) {
			return Checkpoint{}, fmt.Errorf("checkpoint: entry %d name %q invalid or out of order: %w", i, name, ErrCorrupt)
		}
		c.Values[name] = int64(be.Uint64(rest[1+n:]))
		prev = name
		rest = rest[1+n+8:]
	}
	if len(rest) != 0 {
		return Checkpoint{}, fmt.Errorf("checkpoint: %d trailing bytes: %w", len(rest), ErrCorrupt)
	}
	return c, nil
}

// LoadCheckpoint reads the checkpoint at path. A missing file yields an
// empty checkpoint (every Get reports false); a damaged one an error wrapping
// ErrCorrupt (or ErrVersion) that names the path.
func LoadCheckpoint(fs vfs.FS, path string) (Checkpoint, error) {
	b, err := vfs.ReadFile(fs, path)
	if errNotExist(err) {
		return Checkpoint{Values: map[string]int64{}}, nil
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint load %s: %w", path, err)
	}
	c, err := DecodeCheckpoint(b)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint load %s: %w", path, err)
	}
	return c, nil
}

// SaveCheckpoint writes c to path atomically (WriteFileAtomic), replacing
// every entry.
func SaveCheckpoint(fs vfs.FS, path string, c Checkpoint) error {
	cpMu.Lock()
	defer cpMu.Unlock()
	return saveCheckpointLocked(fs, path, c)
}

// saveCheckpointLocked writes c to path. cpMu must be held.
func saveCheckpointLocked(fs vfs.FS, path string, c Checkpoint) error {
	b, err := EncodeCheckpoint(c)
	if err != nil {
		return fmt.Errorf("checkpoint save %s: %w", path, err)
	}
	if err := WriteFileAtomic(fs, path, b); err != nil {
		return fmt.Errorf("checkpoint save: %w", err)
	}
	return nil
}

// cpMu serializes SaveCheckpoint and UpdateCheckpoint within the process, so
// that owners of different entries of one file do not lose each other's
// updates.
var cpMu sync.Mutex

// UpdateCheckpoint sets one entry of the checkpoint at path, keeping the
// others (read, modify, atomic write; serialized with other calls in this
// process). A missing file is created. A file damaged beyond reading
// (ErrCorrupt) is replaced by one holding only this entry: the owners of the
// lost entries saw ErrCorrupt when they loaded it and recover conservatively,
// and their next update restores them. A file of an unknown version
// (ErrVersion) is never overwritten.
func UpdateCheckpoint(fs vfs.FS, path, name string, value int64) error {
	if !validName(name) {
		return fmt.Errorf("checkpoint update %s: entry %q: %w", path, name, ErrInvalidName)
	}
	cpMu.Lock()
	defer cpMu.Unlock()
	c, err := LoadCheckpoint(fs, path)
	switch {
	case err == nil:
	case errors.Is(err, ErrCorrupt):
		c = Checkpoint{}
	default:
		return fmt.Errorf("checkpoint update: %w", err)
	}
	c.Set(name, value)
	return saveCheckpointLocked(fs, path, c)
}
