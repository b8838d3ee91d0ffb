package index

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
)

func (ix *Index) load() error {
	des, err := ix.fs.ReadDir(ix.dir)
	if err != nil {
		return fmt.Errorf("index open %s: %w", ix.dir, err)
	}
	var seqs []uint64
	for _, de := range des {
		if seq, ok := parseFileName(de.Name()); ok && !de.IsDir() {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	for i, seq := range seqs {
		fl, ok, err := ix.loadFile(seq)
		if err != nil {
			return err
		}
		if !ok {
			ix.opts.Logger.Warn().Str("file", fileName(seq)).Int("dropped_files", len(seqs)-i).
				Msg("index file has no valid header; dropping it and later files (they are rebuilt from the commitlog)")
			for _, s := range seqs[i:] {
				if err := ix.fs.Remove(ix.path(s)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("index open: remove %s: %w", ix.path(s), err)
				}
			}
			if err := ix.fs.SyncDir(ix.dir); err != nil {
				return fmt.Errorf("index open %s: %w", ix.dir, err)
			}
			break
		}
		ix.files = append(ix.files, fl)
	}
	// Files before the last must be sealed (a crash while sealing leaves one
	// that is not): scan and seal them.
	for _, fl := range ix.files[:max(0, len(ix.files)-1)] {
		if fl.slots != nil {
			if err := fl.seal(); err != nil {
				return err
			}
		}
	}
	var pos int64
	if n := len(ix.files); n > 0 {
		pos = ix.files[n-1].h.position
	}
	ix.durable, ix.flushed = pos, pos
	if err := ix.cut(pos); err != nil {
		return err
	}
	if err := ix.ensureActive(); err != nil {
		return err
	}
	if n := len(ix.files); n > 0 && ix.files[n-1].count > 0 {
		ix.lastAdded = ix.files[n-1].lastOffset
	}
	return nil
}

func (ix *Index) path(seq uint64) string { return ix.dir + string(os.PathSeparator) + fileName(seq) }

// loadFile opens one file. A sealed file is checked (its last entry must
// read back) and closed; an unsealed one is scanned and stays open. ok is
// false when no header copy is valid.
func (ix *Index) loadFile(seq uint64) (*file, bool, error) {
	path := ix.path(seq)
	f, err := ix.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, false, fmt.Errorf("index open %s: %w", path, err)
	}
	h, ok, err := readHeader(f)
	if err != nil || !ok {
		_ = f.Close()
		if err != nil {
			return nil, false, fmt.Errorf("index open %s: %w", path, err)
		}
		return nil, false, nil
	}
	fl := &file{seq: seq, path: path, h: h, f: f}
	if h.sealed() {
		fl.count, fl.minTS, fl.maxTS = h.entries, h.minTS, h.maxTS
		var last entry
		err := errors.New("sealed without entries")
		if h.entries > 0 {
			last, err = fl.readEntry(f, h.entries)
		}
		if err == nil {
			fl.lastOffset, fl.lastTS = last.offset, last.ts
			if err := f.Close(); err != nil {
				return nil, false, fmt.Errorf("index open %s: %w", path, err)
			}
			fl.f = nil
			return fl, true, nil
		}
		// A sealed file whose entries do not read back: rebuild it.
		ix.opts.Logger.Warn().Str("file", path).Msg("sealed index file is damaged; rescanning it")
		fl.h.flags &^= flagSealed
	}
	if err := fl.scan(); err != nil {
		_ = f.Close()
		return nil, false, err
	}
	return fl, true, nil
}

// cut removes the entries at or above pos: files that start at or above it
// are deleted, the file holding the first such entry is cut and becomes the
// active file again.
func (ix *Index) cut(pos int64) error {
	k := -1
	for i, fl := range ix.files {
		if fl.count > 0 && fl.lastOffset >= pos {
			k = i
			break
		}
	}
	if k < 0 {
		return nil
	}
	for _, fl := range ix.files[k+1:] {
		if fl.f != nil {
			_ = fl.f.Close()
		}
		if err := ix.fs.Remove(fl.path); err != nil {
			return fmt.Errorf("index cut: remove %s: %w", fl.path, err)
		}
	}
	ix.files = ix.files[:k+1]
	fl := ix.files[k]
	if fl.f == nil {
		f, err := ix.fs.OpenFile(fl.path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("index cut %s: %w", fl.path, err)
		}
		fl.f = f
	}
	var readErr error
	keep := sort.Search(int(fl.count), func(i int) bool {
		e, err := fl.readEntry(fl.f, uint32(i+1))
		if err != nil {
			readErr = err
			return true
		}
		return e.offset >= pos
	})
	if readErr != nil {
		return fmt.Errorf("index cut: %w", readErr)
	}
	ix.opts.Logger.Info().Str("file", fl.path).Int64("position", pos).Uint32("entries_before", fl.count).
		Int("entries_kept", keep).Int("files_removed", len(ix.files)-k-1).Msg("index cut back to the durable position")
	if err := fl.f.Truncate(entriesStart(fl.h.slots) + int64(keep)*entrySize); err != nil {
		return fmt.Errorf("index cut %s: %w", fl.path, err)
	}
	fl.h.flags &^= flagSealed
	if err := fl.scan(); err != nil {
		return err
	}
	fl.h.position = min(pos, ix.durable) // every entry below it is durable
	if err := fl.writeHeader(); err != nil {
		return err
	}
	if err := fl.f.Sync(); err != nil {
		return fmt.Errorf("index cut %s: %w", fl.path, err)
	}
	if err := ix.fs.SyncDir(ix.dir); err != nil {
		return fmt.Errorf("index cut %s: %w", ix.dir, err)
	}
	ix.durable = min(ix.durable, pos)
	return nil
}
