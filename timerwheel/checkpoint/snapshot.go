package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// These constants are part of the on-disk format and must not be changed.
const (
	// SnapshotMagic opens every snapshot file.
	SnapshotMagic = "WMQWHEEL"
	// SnapshotVersion is the snapshot format version written here. Version
	// 2 added each slot's lowest CommitLog offset; version 1 is still read.
	SnapshotVersion = 2
	snapHeader      = 112
	slotSizeV1      = 32
	slotSizeV2      = 40
	segSize         = 16
	snapTrailer     = 4
)

// MinCLUnknown is Slot.MinCLOffset of a slot read from a version 1
// snapshot, which did not record it.
const MinCLUnknown = -1

// Slot is one non-empty wheel slot: the chain of TimerLog records linked
// from Head through each record's prev pointer down to First.
type Slot struct {
	// No is the absolute slot (near) or bucket (far) number.
	No int64
	// Head is the newest record of the chain, First the oldest.
	Head, First uint64
	// N and NC count the normal and cancel records in the chain.
	N, NC uint32
	// MinCLOffset is at or below the lowest CommitLog offset a normal
	// record of the chain refers to (math.MaxInt64: none; MinCLUnknown:
	// read from a version 1 snapshot).
	MinCLOffset int64
}

// Segment summarises one TimerLog segment for CommitLog retention.
type Segment struct {
	// First is the segment's first sequence.
	First uint64
	// MinCLOffset is the lowest CommitLog offset any record in it refers to.
	MinCLOffset int64
}

// Snapshot is the wheel state as of TimerLog sequence Seq: recovery loads
// it and replays the records after Seq.
type Snapshot struct {
	// Version is the format version it was decoded from (EncodeSnapshot
	// always writes SnapshotVersion).
	Version uint8
	// Seq is the last TimerLog sequence the snapshot covers.
	Seq uint64
	// AckedMs and AckedSeq are the ack position when it was taken.
	AckedMs int64
	// AckedSeq: see AckedMs.
	AckedSeq uint64
	// RelinkedUpToMs is the far-wheel relink boundary.
	RelinkedUpToMs int64
	// EnqueueQueueOffset is the highest queue offset up to Seq.
	EnqueueQueueOffset int64
	// Geometry is the wheel shape.
	Geometry Geometry
	// Near lists the non-empty near-wheel slots.
	Near []Slot
	// Far lists the non-empty far-wheel buckets.
	Far []Slot
	// Segments summarises the TimerLog segments.
	Segments []Segment
}

// EncodeSnapshot returns the file encoding of s (SnapshotVersion).
func EncodeSnapshot(s *Snapshot) []byte { return encodeSnapshot(s, SnapshotVersion) }

// slotSizeOf is the slot record size of a format version.
func slotSizeOf(ver uint8) int {
	if ver == 1 {
		return slotSizeV1
	}
	return slotSizeV2
}

// encodeSnapshot encodes s in format version ver (1 or 2; 1 only for
// tests of the reader).
func encodeSnapshot(s *Snapshot, ver uint8) []byte {
	slotSize := slotSizeOf(ver)
	n := snapHeader + slotSize*(len(s.Near)+len(s.Far)) + segSize*len(s.Segments) + snapTrailer
	b := make([]byte, n)
	be := binary.BigEndian
	copy(b, SnapshotMagic)
	b[8] = ver
	be.PutUint64(b[16:], s.Seq)
	be.PutUint64(b[24:], uint64(s.AckedMs))
	be.PutUint64(b[32:], s.AckedSeq)
	be.PutUint64(b[40:], uint64(s.RelinkedUpToMs))
	be.PutUint64(b[48:], uint64(s.EnqueueQueueOffset))
	putGeometry(b[56:], s.Geometry)
	be.PutUint32(b[96:], uint32(len(s.Near)))
	be.PutUint32(b[100:], uint32(len(s.Far)))
	be.PutUint32(b[104:], uint32(len(s.Segments)))
	p := snapHeader
	for _, sl := range [][]Slot{s.Near, s.Far} {
		for _, x := range sl {
			be.PutUint64(b[p:], uint64(x.No))
			be.PutUint64(b[p+8:], x.Head)
			be.PutUint64(b[p+16:], x.First)
			be.PutUint32(b[p+24:], x.N)
			be.PutUint32(b[p+28:], x.NC)
			if ver >= 2 {
				be.PutUint64(b[p+32:], uint64(x.MinCLOffset))
			}
			p += slotSize
		}
	}
	for _, g := range s.Segments {
		be.PutUint64(b[p:], g.First)
		be.PutUint64(b[p+8:], uint64(g.MinCLOffset))
		p += segSize
	}
	be.PutUint32(b[p:], crc32.Checksum(b[:p], castagnoli))
	return b
}

// DecodeSnapshot parses a snapshot file; invalid input yields an error
// wrapping ErrCorrupt, never a panic or an allocation beyond len(b).
func DecodeSnapshot(b []byte) (*Snapshot, error) {
	if len(b) < snapHeader+snapTrailer {
		return nil, fmt.Errorf("snapshot: %d bytes: %w", len(b), ErrCorrupt)
	}
	be := binary.BigEndian
	ver := b[8]
	if string(b[:8]) != SnapshotMagic || (ver != SnapshotVersion && ver != SnapshotVersion-1) {
		return nil, fmt.Errorf("snapshot: bad magic or version %d: %w", b[8], ErrCorrupt)
	}
	slotSize := int64(slotSizeOf(ver))
	nNear, nFar, nSeg := int64(be.Uint32(b[96:])), int64(be.Uint32(b[100:])), int64(be.Uint32(b[104:]))
	if want := snapHeader + slotSize*(nNear+nFar) + segSize*nSeg + snapTrailer; want != int64(len(b)) {
		return nil, fmt.Errorf("snapshot: %d bytes, counts say %d: %w", len(b), want, ErrCorrupt)
	}
	p := len(b) - snapTrailer
	if got, want := crc32.Checksum(b[:p], castagnoli), be.Uint32(b[p:]); got != want {
		return nil, fmt.Errorf("snapshot: crc %08x, stored %08x: %w", got, want, ErrCorrupt)
	}
	for _, x := range b[9:16] {
		if x != 0 {
			return nil, fmt.Errorf("snapshot: reserved bytes set: %w", ErrCorrupt)
		}
	}
	if be.Uint32(b[108:]) != 0 {
		return nil, fmt.Errorf("snapshot: reserved bytes set: %w", ErrCorrupt)
	}
	s := &Snapshot{
		Version:            ver,
		Seq:                be.Uint64(b[16:]),
		AckedMs:            int64(be.Uint64(b[24:])),
		AckedSeq:           be.Uint64(b[32:]),
		RelinkedUpToMs:     int64(be.Uint64(b[40:])),
		EnqueueQueueOffset: int64(be.Uint64(b[48:])),
		Geometry:           getGeometry(b[56:]),
		Near:               make([]Slot, nNear),
		Far:                make([]Slot, nFar),
		Segments:           make([]Segment, nSeg),
	}
	p = snapHeader
	for _, sl := range [][]Slot{s.Near, s.Far} {
		for i := range sl {
			sl[i] = Slot{
				No:    int64(be.Uint64(b[p:])),
				Head:  be.Uint64(b[p+8:]),
				First: be.Uint64(b[p+16:]),
				N:     be.Uint32(b[p+24:]),
				NC:    be.Uint32(b[p+28:]),
			}
			sl[i].MinCLOffset = MinCLUnknown
			if ver >= 2 {
				sl[i].MinCLOffset = int64(be.Uint64(b[p+32:]))
			}
			p += int(slotSize)
		}
	}
	for i := range s.Segments {
		s.Segments[i] = Segment{First: be.Uint64(b[p:]), MinCLOffset: int64(be.Uint64(b[p+8:]))}
		p += segSize
	}
	return s, nil
}

// WriteSnapshot replaces the snapshot at path atomically through fs (nil:
// vfs.OS{}): it writes path+".tmp", fsyncs it, renames it over path and
// fsyncs the directory (vfs.WriteFileAtomic's steps, with a fixed
// temporary name that the next snapshot overwrites should a crash leave
// it). With sync false it skips both fsyncs (tests and benchmarks).
func WriteSnapshot(fs vfs.FS, path string, b []byte, sync bool) error {
	fs = vfs.Default(fs)
	tmp := path + ".tmp"
	f, err := fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("snapshot create %s: %w", tmp, err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("snapshot write %s: %w", tmp, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return fmt.Errorf("snapshot sync %s: %w", tmp, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("snapshot close %s: %w", tmp, err)
	}
	if err := fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("snapshot rename %s: %w", path, err)
	}
	if !sync {
		return nil
	}
	return syncDir(fs, filepath.Dir(path))
}

// ReadSnapshot reads and decodes the snapshot at path through fs (nil:
// vfs.OS{}). A missing file returns (nil, nil).
func ReadSnapshot(fs vfs.FS, path string) (*Snapshot, error) {
	b, err := vfs.ReadFile(vfs.Default(fs), path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot read %s: %w", path, err)
	}
	s, err := DecodeSnapshot(b)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return s, nil
}
