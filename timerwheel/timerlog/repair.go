package timerlog

import (
	"fmt"
	"os"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Repair describes what Open changed or found in the log's tail.
type Repair struct {
	// TornBytes is the number of bytes cut from the tail: partial entries
	// and entries that fail validation with no valid entry after them.
	TornBytes int64
	// Uncommitted is the number of valid records dropped because the
	// atomic group they belonged to was not complete (no FlagCommit record
	// after them).
	Uncommitted uint64
	// Corrupt is the number of invalid entries kept in place because they
	// are at or below MinKeep: they were synced, so this is bit rot, not a
	// torn write. Reading them returns ErrCorrupt.
	Corrupt uint64
	// RemovedSegments counts segment files deleted because they held only
	// uncommitted records.
	RemovedSegments int
	// Missing is set when the log ends before MinKeep: records that had
	// been synced are gone.
	Missing bool
}

// Changed reports whether the repair modified any file.
func (r Repair) Changed() bool {
	return r.TornBytes > 0 || r.Uncommitted > 0 || r.RemovedSegments > 0
}

// entryValid reports whether the EntrySize bytes at e hold the record with
// sequence seq, and returns it.
func entryValid(e []byte, seq uint64) (Record, bool) {
	if len(e) != EntrySize || e[0] != RecordSize {
		return Record{}, false
	}
	r, err := Decode(e[1:])
	if err != nil || r.Seq != seq {
		return Record{}, false
	}
	return r, true
}

// repairTail validates the tail of the log in dir before it is opened for
// writing. Only the tail can be torn (a segment is fsynced before the next
// one starts), but an atomic group may span segments, so the search for the
// last FlagCommit record walks back over whole segments. Nothing at or below
// minKeep (the last sequence known to be synced) is ever removed.
func repairTail(fs vfs.FS, dir string, minKeep uint64, log zerolog.Logger) (Repair, error) {
	var rep Repair
	segs, err := listSegments(fs, dir)
	if err != nil || len(segs) == 0 {
		return rep, err
	}
	var dirty bool
	last := uint64(0)
	for i := len(segs) - 1; i >= 0; i-- {
		seg := segs[i]
		data, err := vfs.ReadFile(fs, seg.path)
		if err != nil {
			return rep, fmt.Errorf("timerlog repair read %s: %w", seg.path, err)
		}
		n := uint64(len(data) / EntrySize)
		entry := func(k uint64) (Record, bool) {
			return entryValid(data[k*EntrySize:(k+1)*EntrySize], seg.first+k)
		}
		// keepMin entries are synced according to minKeep: they stay.
		var keepMin uint64
		if minKeep >= seg.first {
			keepMin = min(minKeep-seg.first+1, n)
		}
		// Torn tail: after the synced prefix, cut at the first invalid
		// entry. Nothing there was synced, so a valid entry after a hole
		// (pages written back out of order) may go as well.
		keep := keepMin
		for keep < n {
			if _, ok := entry(keep); !ok {
				break
			}
			keep++
		}
		rep.TornBytes += int64(len(data)) - int64(keep*EntrySize)
		// Invalid entries that stay (synced ones) are bit rot. Restore the
		// length byte so that the segment still parses as tidwall/wal's
		// format (every later entry where it belongs); the checksum still
		// fails on read.
		for k := uint64(0); k < keep; k++ {
			if _, ok := entry(k); ok {
				continue
			}
			rep.Corrupt++
			if data[k*EntrySize] != RecordSize {
				if err := writeByteAt(fs, seg.path, int64(k*EntrySize), RecordSize); err != nil {
					return rep, err
				}
				dirty = true
			}
		}
		// End of the last complete atomic group.
		commit := keep
		for ; commit > keepMin; commit-- {
			if r, ok := entry(commit - 1); ok && r.Flags&FlagCommit != 0 {
				break
			}
		}
		for k := commit; k < keep; k++ {
			if _, ok := entry(k); ok {
				rep.Uncommitted++
			}
		}
		if commit == 0 && i > 0 {
			// Nothing committed in this segment: drop it, look at the one
			// before (complete, since it was synced before this one began).
			if err := fs.Remove(seg.path); err != nil {
				return rep, fmt.Errorf("timerlog repair remove %s: %w", seg.path, err)
			}
			rep.RemovedSegments++
			dirty = true
			continue
		}
		if size := int64(commit * EntrySize); size < int64(len(data)) {
			if err := truncateSync(fs, seg.path, size); err != nil {
				return rep, err
			}
			dirty = true
		}
		last = seg.first + commit - 1
		break
	}
	if minKeep > 0 && last < minKeep {
		rep.Missing = true
	}
	if rep.Changed() || rep.Corrupt > 0 || rep.Missing {
		log.Warn().Int64("torn_bytes", rep.TornBytes).Uint64("uncommitted", rep.Uncommitted).
			Uint64("corrupt", rep.Corrupt).Int("removed_segments", rep.RemovedSegments).
			Bool("missing", rep.Missing).Uint64("last_seq", last).Msg("timerlog: repaired tail")
	}
	if dirty {
		if err := syncDir(fs, dir); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func writeByteAt(fs vfs.FS, path string, off int64, b byte) error {
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("timerlog repair open %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{b}, off); err != nil {
		return fmt.Errorf("timerlog repair write %s@%d: %w", path, off, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("timerlog repair sync %s: %w", path, err)
	}
	return nil
}

func truncateSync(fs vfs.FS, path string, size int64) error {
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("timerlog repair open %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("timerlog repair truncate %s to %d: %w", path, size, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("timerlog repair sync %s: %w", path, err)
	}
	return nil
}

// syncDir fsyncs a directory so that file creations, renames and removals
// in it are durable.
func syncDir(fs vfs.FS, dir string) error {
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("timerlog sync dir %s: %w", dir, err)
	}
	return nil
}
