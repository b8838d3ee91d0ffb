package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Epoch is one entry of the epoch file: the master of Epoch wrote the
// CommitLog from Start up to the next entry's Start.
type Epoch struct {
	// Epoch is the master epoch (the controller adds one on every master
	// change).
	Epoch int64
	// Start is the CommitLog offset of the epoch's first byte.
	Start int64
}

// Epoch file constants (part of the on-disk format).
const (
	epochMagic      uint32 = 0x57484145 // "WHAE"
	epochVersion    uint32 = 1
	epochHeaderSize        = 8
	epochEntrySize         = 20 // epoch(8) start(8) crc32c(4)
	// EpochsFile is the epoch file's name inside the ha directory.
	EpochsFile = "epochs"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrEpochOrder means an Append would not keep the list ascending.
var ErrEpochOrder = errors.New("ha: epoch entry out of order")

// ErrEpochFile means the epoch file's header is not one this code reads.
var ErrEpochFile = errors.New("ha: not an epoch file")

// Epochs is the epoch file of one data directory. Safe for concurrent use.
type Epochs struct {
	fs   vfs.FS
	path string

	mu      sync.Mutex
	entries []Epoch
}

// OpenEpochs opens (creating the directory if needed) the epoch file in
// dir (<data>/ha). A missing file is an empty list; a torn tail ends the
// list.
func OpenEpochs(fs vfs.FS, dir string) (*Epochs, error) {
	fs = vfs.Default(fs)
	if err := vfs.MkdirAllSynced(fs, dir, 0o755); err != nil {
		return nil, fmt.Errorf("ha epochs open %s: %w", dir, err)
	}
	e := &Epochs{fs: fs, path: filepath.Join(dir, EpochsFile)}
	b, err := vfs.ReadFile(fs, e.path)
	if errors.Is(err, os.ErrNotExist) {
		return e, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ha epochs open: %w", err)
	}
	if e.entries, err = DecodeEpochFile(b); err != nil {
		return nil, fmt.Errorf("ha epochs open %s: %w", e.path, err)
	}
	return e, nil
}

// DecodeEpochFile parses an epoch file's bytes. Entries stop at the first
// short or damaged one (a torn tail); entries out of order end the list
// too.
func DecodeEpochFile(b []byte) ([]Epoch, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) < epochHeaderSize || binary.BigEndian.Uint32(b) != epochMagic {
		return nil, fmt.Errorf("header: %w", ErrEpochFile)
	}
	if v := binary.BigEndian.Uint32(b[4:]); v != epochVersion {
		return nil, fmt.Errorf("version %d: %w", v, ErrEpochFile)
	}
	var out []Epoch
	for p := epochHeaderSize; p+epochEntrySize <= len(b); p += epochEntrySize {
		ent := b[p : p+epochEntrySize]
		if crc32.Checksum(ent[:16], castagnoli) != binary.BigEndian.Uint32(ent[16:]) {
			break
		}
		e := Epoch{Epoch: int64(binary.BigEndian.Uint64(ent)), Start: int64(binary.BigEndian.Uint64(ent[8:]))}
		if n := len(out); e.Start < 0 || (n > 0 && !after(out[n-1], e)) {
			break
		}
		out = append(out, e)
	}
	return out, nil
}

// EncodeEpochFile returns the bytes of an epoch file holding entries.
func EncodeEpochFile(entries []Epoch) []byte {
	b := make([]byte, 0, epochHeaderSize+epochEntrySize*len(entries))
	b = binary.BigEndian.AppendUint32(b, epochMagic)
	b = binary.BigEndian.AppendUint32(b, epochVersion)
	for _, e := range entries {
		p := len(b)
		b = binary.BigEndian.AppendUint64(b, uint64(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.Start))
		b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b[p:], castagnoli))
	}
	return b
}

// after reports whether next may follow prev: a higher epoch starting at
// or after prev's start.
func after(prev, next Epoch) bool { return next.Epoch > prev.Epoch && next.Start >= prev.Start }

// Entries returns a copy of the list, oldest first.
func (e *Epochs) Entries() []Epoch {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.entries)
}

// Last returns the newest entry (false when the list is empty).
func (e *Epochs) Last() (Epoch, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.entries) == 0 {
		return Epoch{}, false
	}
	return e.entries[len(e.entries)-1], true
}

// Append adds (epoch, start) and persists the list. Appending the last
// entry again is a no-op; an epoch not above the last, or a start below
// it, is refused (ErrEpochOrder).
func (e *Epochs) Append(epoch, start int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	next := Epoch{Epoch: epoch, Start: start}
	if n := len(e.entries); n > 0 {
		if e.entries[n-1] == next {
			return nil
		}
		if !after(e.entries[n-1], next) {
			return fmt.Errorf("ha epochs append %+v after %+v: %w", next, e.entries[n-1], ErrEpochOrder)
		}
	} else if start < 0 {
		return fmt.Errorf("ha epochs append %+v: %w", next, ErrEpochOrder)
	}
	return e.store(append(slices.Clone(e.entries), next))
}

// TruncateAfter drops the entries that start after offset (the CommitLog
// was cut there) and persists the list.
func (e *Epochs) TruncateAfter(offset int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	keep := len(e.entries)
	for keep > 0 && e.entries[keep-1].Start > offset {
		keep--
	}
	if keep == len(e.entries) {
		return nil
	}
	return e.store(slices.Clone(e.entries[:keep]))
}

// Reset replaces the whole list (a replica adopting its master's history
// below its consistent point) and persists it. entries must be ascending.
func (e *Epochs) Reset(entries []Epoch) error {
	for i := 1; i < len(entries); i++ {
		if !after(entries[i-1], entries[i]) {
			return fmt.Errorf("ha epochs reset: %+v after %+v: %w", entries[i], entries[i-1], ErrEpochOrder)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if slices.Equal(e.entries, entries) {
		return nil
	}
	return e.store(slices.Clone(entries))
}

// store writes entries atomically and makes them current. e.mu is held.
func (e *Epochs) store(entries []Epoch) error {
	if err := vfs.WriteFileAtomic(e.fs, e.path, EncodeEpochFile(entries), 0o644); err != nil {
		return fmt.Errorf("ha epochs: %w", err)
	}
	e.entries = entries
	return nil
}
