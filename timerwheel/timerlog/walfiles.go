package timerlog

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Leftovers of tidwall/wal. Versions of this package that wrote through
// wal called wal.TruncateFront, which writes the kept part of a segment to
// "<first>.START" (through "<first>.START.TEMP"), removes the segments
// before it and renames the .START file over "<first>"; wal.TruncateBack
// (never called here, handled for completeness) does the same with
// "<first>.END" at the other end. A crash midway leaves those files, and
// wal.Open finishes the job. finishWALTruncate does what wal v1.2.1's load
// does with them, step for step, so that such a directory opens as it did.

const (
	walStart = ".START"
	walEnd   = ".END"
	walTemp  = ".TEMP"
)

// finishWALTruncate completes an interrupted wal truncation in dir, as
// wal.Open does: with a .START file, every segment file listed before it
// (lower first sequence, or the same one) is removed and the .START file
// renamed to its plain name; with an .END file, every file listed after it
// is removed and the .END file renamed to its plain name (replacing the
// segment of the same name). Both at once is corrupt (wal refuses it too).
// It also removes wal's .TEMP files, which wal never reads (it removes them
// itself unless it crashed while writing one). It reports whether it
// changed the directory; the caller fsyncs it.
func finishWALTruncate(fs vfs.FS, dir string) (bool, error) {
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("timerlog list %s: %w", dir, err)
	}
	// names: segment files as wal lists them (sorted by name, plain,
	// .START and .END files of a valid first sequence).
	var names []string
	var temps []string
	startAt, endAt := -1, -1
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || len(name) < 20 {
			continue
		}
		if first, err := strconv.ParseUint(name[:20], 10, 64); err != nil || first == 0 {
			continue
		}
		isStart := len(name) == 20+len(walStart) && strings.HasSuffix(name, walStart)
		isEnd := len(name) == 20+len(walEnd) && strings.HasSuffix(name, walEnd)
		switch {
		case isWALTemp(name):
			temps = append(temps, name)
			continue
		case len(name) != 20 && !isStart && !isEnd:
			continue
		case isStart:
			startAt = len(names) // wal keeps the last one
		case isEnd && endAt == -1:
			endAt = len(names) // and the first one
		}
		names = append(names, name)
	}
	changed := false
	for _, name := range temps {
		if err := fs.Remove(filepath.Join(dir, name)); err != nil {
			return changed, fmt.Errorf("timerlog remove %s: %w", name, err)
		}
		changed = true
	}
	if startAt == -1 && endAt == -1 {
		return changed, nil
	}
	if startAt != -1 && endAt != -1 {
		return changed, fmt.Errorf("timerlog open %s: both %s and %s of an interrupted tidwall/wal truncation: %w",
			dir, names[startAt], names[endAt], ErrCorrupt)
	}
	// In wal's order: the segments before .START oldest first, those
	// after .END newest first.
	var remove []string
	at, suffix := startAt, walStart
	if startAt != -1 {
		remove = names[:startAt]
	} else {
		at, suffix = endAt, walEnd
		for i := len(names) - 1; i > endAt; i-- {
			remove = append(remove, names[i])
		}
	}
	for _, name := range remove {
		if err := fs.Remove(filepath.Join(dir, name)); err != nil {
			return true, fmt.Errorf("timerlog finish wal truncation: remove %s: %w", name, err)
		}
	}
	from := filepath.Join(dir, names[at])
	if err := fs.Rename(from, strings.TrimSuffix(from, suffix)); err != nil {
		return true, fmt.Errorf("timerlog finish wal truncation: %w", err)
	}
	return true, nil
}

// isWALTemp reports whether name is the temporary file wal writes a .START
// or .END file through.
func isWALTemp(name string) bool {
	return len(name) == 20+len(walStart+walTemp) && strings.HasSuffix(name, walStart+walTemp) ||
		len(name) == 20+len(walEnd+walTemp) && strings.HasSuffix(name, walEnd+walTemp)
}
