package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// These constants are part of the on-disk format and must not be changed.
const (
	// Size is the encoded size of one checkpoint copy.
	Size = 128
	// copyStride is the distance between the two copies in the file.
	copyStride = 512
	// Version is the checkpoint format version written by this package.
	Version = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Geometry is the wheel shape a store was created with. Slot numbers in the
// TimerLog depend on it, so a store refuses to open with a different one.
type Geometry struct {
	// SlotMs is the near-wheel slot width.
	SlotMs int64
	// NearSlots is the number of near-wheel slots.
	NearSlots int64
	// FarSlotMs is the far-wheel bucket width.
	FarSlotMs int64
	// FarSlots is the number of far-wheel buckets.
	FarSlots int64
	// CancelWindowMs is the cancel matching window.
	CancelWindowMs int64
}

// Checkpoint is the small, frequently written progress record of the timer
// store. Every position in it is covered by data that was synced before it
// was written.
type Checkpoint struct {
	// Counter increases by one per write; the copy with the higher counter
	// is the latest.
	Counter uint64
	// AckedMs is the time part of the acknowledged dequeue cursor.
	AckedMs int64
	// AckedSeq is the sequence part of the acknowledged dequeue cursor.
	AckedSeq uint64
	// FlushedSeq is the last TimerLog sequence synced before this write.
	FlushedSeq uint64
	// SnapshotSeq is the TimerLog sequence the current snapshot covers.
	SnapshotSeq uint64
	// RelinkedUpToMs is the far-wheel boundary: far buckets before it have
	// been relinked into the near wheel.
	RelinkedUpToMs int64
	// EnqueueQueueOffset is the highest rmq_sys_wheel_timer queue offset
	// in the TimerLog up to FlushedSeq (-1: none).
	EnqueueQueueOffset int64
	// Geometry is the wheel shape.
	Geometry Geometry
}

// Encode returns the Size-byte encoding of c.
func (c *Checkpoint) Encode() []byte {
	b := make([]byte, Size)
	be := binary.BigEndian
	be.PutUint16(b[4:], Size)
	b[6] = Version
	be.PutUint64(b[8:], c.Counter)
	be.PutUint64(b[16:], uint64(c.AckedMs))
	be.PutUint64(b[24:], c.AckedSeq)
	be.PutUint64(b[32:], c.FlushedSeq)
	be.PutUint64(b[40:], c.SnapshotSeq)
	be.PutUint64(b[48:], uint64(c.RelinkedUpToMs))
	be.PutUint64(b[56:], uint64(c.EnqueueQueueOffset))
	putGeometry(b[64:], c.Geometry)
	be.PutUint32(b[0:], crc32.Checksum(b[4:], castagnoli))
	return b
}

func putGeometry(b []byte, g Geometry) {
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(g.SlotMs))
	be.PutUint64(b[8:], uint64(g.NearSlots))
	be.PutUint64(b[16:], uint64(g.FarSlotMs))
	be.PutUint64(b[24:], uint64(g.FarSlots))
	be.PutUint64(b[32:], uint64(g.CancelWindowMs))
}

func getGeometry(b []byte) Geometry {
	be := binary.BigEndian
	return Geometry{
		SlotMs:         int64(be.Uint64(b[0:])),
		NearSlots:      int64(be.Uint64(b[8:])),
		FarSlotMs:      int64(be.Uint64(b[16:])),
		FarSlots:       int64(be.Uint64(b[24:])),
		CancelWindowMs: int64(be.Uint64(b[32:])),
	}
}

// Decode parses one checkpoint copy; any invalid input yields an error
// wrapping ErrCorrupt.
func Decode(b []byte) (Checkpoint, error) {
	if len(b) != Size {
		return Checkpoint{}, fmt.Errorf("checkpoint: %d bytes: %w", len(b), ErrCorrupt)
	}
	be := binary.BigEndian
	if got, want := crc32.Checksum(b[4:], castagnoli), be.Uint32(b); got != want {
		return Checkpoint{}, fmt.Errorf("checkpoint: crc %08x, stored %08x: %w", got, want, ErrCorrupt)
	}
	if be.Uint16(b[4:]) != Size || b[6] != Version || b[7] != 0 {
		return Checkpoint{}, fmt.Errorf("checkpoint: length %d version %d: %w", be.Uint16(b[4:]), b[6], ErrCorrupt)
	}
	for _, x := range b[104:] {
		if x != 0 {
			return Checkpoint{}, fmt.Errorf("checkpoint: reserved bytes set: %w", ErrCorrupt)
		}
	}
	return Checkpoint{
		Counter:            be.Uint64(b[8:]),
		AckedMs:            int64(be.Uint64(b[16:])),
		AckedSeq:           be.Uint64(b[24:]),
		FlushedSeq:         be.Uint64(b[32:]),
		SnapshotSeq:        be.Uint64(b[40:]),
		RelinkedUpToMs:     int64(be.Uint64(b[48:])),
		EnqueueQueueOffset: int64(be.Uint64(b[56:])),
		Geometry:           getGeometry(b[64:]),
	}, nil
}

// File is the checkpoint file: two copies, at byte 0 and byte 512, written
// alternately, each with its own CRC and counter, so that a torn write
// leaves the other copy intact (the bbolt meta-page scheme). No rename, one
// fsync per write.
type File struct {
	// NoSync skips the fsync after each write (tests and benchmarks).
	NoSync bool

	f      vfs.File
	path   string
	copies [2]*Checkpoint
}

// Open opens or creates the checkpoint file at path through fs (nil:
// vfs.OS{}) and reads both copies. A file it creates is made durable (its
// directory is fsynced) before it returns.
func Open(fs vfs.FS, path string) (*File, error) {
	fs = vfs.Default(fs)
	_, statErr := fs.Stat(path)
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("checkpoint open %s: %w", path, err)
	}
	cf := &File{f: f, path: path}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(fs, filepath.Dir(path)); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	buf := make([]byte, Size)
	for i := range cf.copies {
		n, err := f.ReadAt(buf, int64(i*copyStride))
		if err != nil && !errors.Is(err, io.EOF) {
			_ = f.Close()
			return nil, fmt.Errorf("checkpoint read %s: %w", path, err)
		}
		if n == Size {
			if c, err := Decode(buf); err == nil {
				cf.copies[i] = &c
			}
		}
	}
	return cf, nil
}

// Latest returns the valid copy with the highest counter.
func (cf *File) Latest() (Checkpoint, bool) {
	a, b := cf.copies[0], cf.copies[1]
	switch {
	case a == nil && b == nil:
		return Checkpoint{}, false
	case a == nil:
		return *b, true
	case b == nil || a.Counter > b.Counter:
		return *a, true
	default:
		return *b, true
	}
}

// Previous returns the older valid copy, or the latest when only one copy
// is valid. It is what a crash during the next write would leave.
func (cf *File) Previous() (Checkpoint, bool) {
	a, b := cf.copies[0], cf.copies[1]
	switch {
	case a == nil && b == nil:
		return Checkpoint{}, false
	case a == nil:
		return *b, true
	case b == nil || a.Counter < b.Counter:
		return *a, true
	default:
		return *b, true
	}
}

// Write stores c (its Counter is set to the latest counter + 1) over the
// older copy and fsyncs the file.
func (cf *File) Write(c Checkpoint) error {
	if cf.f == nil {
		return ErrClosed
	}
	latest, _ := cf.Latest()
	c.Counter = latest.Counter + 1
	i := int(c.Counter % 2)
	if _, err := cf.f.WriteAt(c.Encode(), int64(i*copyStride)); err != nil {
		return fmt.Errorf("checkpoint write %s: %w", cf.path, err)
	}
	if !cf.NoSync {
		if err := cf.f.Sync(); err != nil {
			return fmt.Errorf("checkpoint sync %s: %w", cf.path, err)
		}
	}
	cf.copies[i] = &c
	return nil
}

// Close closes the file.
func (cf *File) Close() error {
	if cf.f == nil {
		return ErrClosed
	}
	err := cf.f.Close()
	cf.f = nil
	if err != nil {
		return fmt.Errorf("checkpoint close %s: %w", cf.path, err)
	}
	return nil
}

// syncDir fsyncs a directory so that a file created or renamed in it is
// durable.
func syncDir(fs vfs.FS, dir string) error {
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("checkpoint sync dir %s: %w", dir, err)
	}
	return nil
}
