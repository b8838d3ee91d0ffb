package meta

import (
	"bytes"
	"fmt"

	"github.com/wheelmq/wheelmq/storage/vfs"

	"github.com/rs/zerolog"
)

// BackupSuffix is appended to a file name to name its previous version.
const BackupSuffix = ".bak"

// loadWithBackup reads path, or path+BackupSuffix when path is missing or
// fails parse, and returns the parsed value. found is false when neither file
// exists. parse must validate the bytes fully and return a fresh value.
// fs nil means the real file system.
func loadWithBackup[T any](fs vfs.FS, path string, log zerolog.Logger, parse func([]byte) (T, error)) (v T, found bool, err error) {
	var zero T
	data, err := vfs.ReadFile(fs, path)
	var mainErr error
	switch {
	case err == nil:
		v, perr := parse(data)
		if perr == nil {
			return v, true, nil
		}
		mainErr = fmt.Errorf("meta load %s: %w: %w", path, ErrCorrupt, perr)
	case errNotExist(err):
	default:
		return zero, false, fmt.Errorf("meta load %s: %w", path, err)
	}

	bak := path + BackupSuffix
	data, err = vfs.ReadFile(fs, bak)
	switch {
	case err == nil:
		v, perr := parse(data)
		if perr != nil {
			if mainErr != nil {
				return zero, false, fmt.Errorf("%w; backup %s: %w", mainErr, bak, perr)
			}
			return zero, false, fmt.Errorf("meta load %s: missing, backup %s: %w: %w", path, bak, ErrCorrupt, perr)
		}
		ev := log.Warn().Str("path", path).Str("backup", bak)
		if mainErr != nil {
			ev = ev.Err(mainErr)
		} else {
			ev = ev.Str("reason", "missing")
		}
		ev.Msg("meta: using backup file")
		return v, true, nil
	case errNotExist(err):
		if mainErr != nil {
			return zero, false, mainErr
		}
		return zero, false, nil
	default:
		if mainErr != nil {
			return zero, false, fmt.Errorf("%w; backup %s: %w", mainErr, bak, err)
		}
		return zero, false, fmt.Errorf("meta load %s: missing, backup: %w", path, err)
	}
}

// saveWithBackup writes data to path atomically after copying the current
// content of path to path+BackupSuffix, unless that content does not parse
// (a corrupt file must not overwrite a good backup). Saving the bytes already
// stored is a no-op.
func saveWithBackup(fs vfs.FS, path string, data []byte, valid func([]byte) bool) error {
	cur, err := vfs.ReadFile(fs, path)
	switch {
	case err == nil:
		if bytes.Equal(cur, data) {
			return nil
		}
		if valid(cur) {
			if err := WriteFileAtomic(fs, path+BackupSuffix, cur); err != nil {
				return fmt.Errorf("meta save %s: backup: %w", path, err)
			}
		}
	case errNotExist(err):
	default:
		return fmt.Errorf("meta save %s: %w", path, err)
	}
	if err := WriteFileAtomic(fs, path, data); err != nil {
		return fmt.Errorf("meta save: %w", err)
	}
	return nil
}
