package meta

import (
	"errors"
	"os"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// WriteFileAtomic replaces path on fs with data so that a crash leaves either
// the old or the new content: it writes a temporary file in the same
// directory, fsyncs it, renames it over path and fsyncs the directory
// (vfs.WriteFileAtomic). The file gets mode 0644. The directory must exist.
// On error the temporary file is removed.
func WriteFileAtomic(fs vfs.FS, path string, data []byte) error {
	return vfs.WriteFileAtomic(vfs.Default(fs), path, data, 0o644)
}

// errNotExist reports whether err means the file does not exist.
func errNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
