package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// fileSuffix ends the name of every index file: <20-digit sequence>.idx.
const fileSuffix = ".idx"

// scanBlock is how many bytes of entries one read of a scan covers.
const scanBlock = 1 << 20

// file is one index file. The newest file is active: its slot table lives
// in memory (slots) and its file stays open. Older files are sealed: their
// slot table is on disk and they are opened per lookup.
type file struct {
	seq  uint64
	path string
	h    header   // the newest header written or read
	f    vfs.File // open while active
	// count is the number of entries in the file.
	count uint32
	// slots is the active file's slot table (nil once sealed).
	slots []uint32
	// minTS, maxTS bound the store timestamps of the entries (count > 0).
	minTS, maxTS int64
	// lastOffset and lastTS are the CommitLog offset and store timestamp of
	// the last entry (count > 0).
	lastOffset, lastTS int64
}

func fileName(seq uint64) string { return fmt.Sprintf("%020d%s", seq, fileSuffix) }

// parseFileName returns the sequence of an index file name.
func parseFileName(name string) (uint64, bool) {
	if len(name) != 20+len(fileSuffix) || filepath.Ext(name) != fileSuffix {
		return 0, false
	}
	seq, err := strconv.ParseUint(name[:20], 10, 64)
	return seq, err == nil && seq > 0
}

// createFile creates an empty active file whose header records position.
// The slot table region is left as a hole (it is written when the file is
// sealed).
func createFile(fs vfs.FS, dir string, seq uint64, slots, maxEntries uint32, position int64) (*file, error) {
	path := filepath.Join(dir, fileName(seq))
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("index create %s: %w", path, err)
	}
	fl := &file{seq: seq, path: path, f: f, slots: make([]uint32, slots),
		h: header{slots: slots, maxEntries: maxEntries, position: position}}
	err = fl.writeHeader()
	if err == nil {
		err = f.Truncate(entriesStart(slots))
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	if err != nil {
		_ = f.Close()
		_ = fs.Remove(path)
		return nil, fmt.Errorf("index create %s: %w", path, err)
	}
	return fl, nil
}

// writeHeader writes fl.h as the next generation, into the copy that does
// not hold the current one, so that a torn write leaves the previous header
// readable.
func (fl *file) writeHeader() error {
	fl.h.generation++
	fl.h.entries = fl.count
	fl.h.minTS, fl.h.maxTS = fl.minTS, fl.maxTS
	var b [headerSize]byte
	fl.h.encode(b[:])
	if _, err := fl.f.WriteAt(b[:], int64(fl.h.generation%headerCopies)*headerSize); err != nil {
		return fmt.Errorf("index write header %s: %w", fl.path, err)
	}
	return nil
}

// readHeader returns the valid header copy with the larger generation.
func readHeader(f vfs.File) (header, bool, error) {
	var b [headerRegion]byte
	n, err := f.ReadAt(b[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return header{}, false, err
	}
	var best header
	found := false
	for c := 0; c < headerCopies; c++ {
		if (c+1)*headerSize > n {
			break
		}
		if h, ok := decodeHeader(b[c*headerSize:]); ok && (!found || h.generation > best.generation) {
			best, found = h, true
		}
	}
	return best, found, nil
}

// scan reads the entries of an unsealed file from the start, stopping at
// the first entry that is torn, zeroed, out of CommitLog order or whose
// chain link points forward; it rebuilds the slot table and the bounds and
// cuts the file after the last good entry.
func (fl *file) scan() error {
	size, err := fl.f.Size()
	if err != nil {
		return fmt.Errorf("index scan %s: %w", fl.path, err)
	}
	start := entriesStart(fl.h.slots)
	fl.slots = make([]uint32, fl.h.slots)
	fl.count = 0
	buf := make([]byte, scanBlock)
	limit := start + int64(fl.h.maxEntries)*entrySize
scan:
	for pos := start; pos < min(size, limit); {
		n, err := fl.f.ReadAt(buf[:min(int64(len(buf)), min(size, limit)-pos)], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("index scan %s at %d: %w", fl.path, pos, err)
		}
		n -= n % entrySize
		if n == 0 {
			break
		}
		for i := 0; i < n; i += entrySize {
			e, ok := decodeEntry(buf[i : i+entrySize])
			num := fl.count + 1
			if !ok || e.prev >= num || (fl.count > 0 && e.offset < fl.lastOffset) ||
				e.prev != fl.slots[e.hash%uint64(fl.h.slots)] {
				break scan
			}
			fl.note(e, num)
		}
		pos += int64(n)
	}
	end := start + int64(fl.count)*entrySize
	if size > end {
		if err := fl.f.Truncate(end); err != nil {
			return fmt.Errorf("index scan %s: cut torn tail at %d: %w", fl.path, end, err)
		}
	}
	return nil
}

// note records entry num (just appended or scanned) in the in-memory state.
func (fl *file) note(e entry, num uint32) {
	if fl.slots != nil {
		fl.slots[e.hash%uint64(fl.h.slots)] = num
	}
	if fl.count == 0 || e.ts < fl.minTS {
		fl.minTS = e.ts
	}
	if fl.count == 0 || e.ts > fl.maxTS {
		fl.maxTS = e.ts
	}
	fl.count = num
	fl.lastOffset, fl.lastTS = e.offset, e.ts
}

// seal writes the slot table, then a header that says sealed, each made
// durable before the next step; the file is then closed.
func (fl *file) seal() error {
	table := make([]byte, len(fl.slots)*slotSize)
	for i, v := range fl.slots {
		binary.BigEndian.PutUint32(table[i*slotSize:], v)
	}
	if _, err := fl.f.WriteAt(table, headerRegion); err != nil {
		return fmt.Errorf("index seal %s: %w", fl.path, err)
	}
	if err := fl.f.Sync(); err != nil {
		return fmt.Errorf("index seal %s: %w", fl.path, err)
	}
	fl.h.flags |= flagSealed
	if err := fl.writeHeader(); err != nil {
		return err
	}
	if err := fl.f.Sync(); err != nil {
		return fmt.Errorf("index seal %s: %w", fl.path, err)
	}
	fl.slots = nil
	err := fl.f.Close()
	fl.f = nil
	if err != nil {
		return fmt.Errorf("index seal %s: %w", fl.path, err)
	}
	return nil
}

// readEntry reads entry num of the file through f.
func (fl *file) readEntry(f vfs.File, num uint32) (entry, error) {
	var b [entrySize]byte
	if _, err := f.ReadAt(b[:], entryPos(fl.h.slots, num)); err != nil {
		return entry{}, fmt.Errorf("index read %s entry %d: %w", fl.path, num, err)
	}
	e, ok := decodeEntry(b[:])
	if !ok {
		return entry{}, fmt.Errorf("index read %s entry %d: checksum mismatch", fl.path, num)
	}
	return e, nil
}

// slotHead returns the newest entry of slot s.
func (fl *file) slotHead(f vfs.File, s uint64) (uint32, error) {
	if fl.slots != nil {
		return fl.slots[s], nil
	}
	var b [slotSize]byte
	if _, err := f.ReadAt(b[:], headerRegion+int64(s)*slotSize); err != nil {
		return 0, fmt.Errorf("index read %s slot %d: %w", fl.path, s, err)
	}
	return binary.BigEndian.Uint32(b[:]), nil
}

// full reports whether the file holds its maximum number of entries.
func (fl *file) full() bool { return fl.count >= fl.h.maxEntries }
