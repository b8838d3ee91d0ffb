package vfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Default returns fs, or OS when fs is nil: the file system stores use
// when their options give none.
func Default(fs FS) FS {
	if fs == nil {
		return OS{}
	}
	return fs
}

// ReadFile reads the whole file name, like os.ReadFile. A nil fs is OS.
func ReadFile(fs FS, name string) ([]byte, error) {
	fs = Default(fs)
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return buf[:n], nil
}

// MkdirAllSynced creates dir and any missing parents, and fsyncs the parent
// of every directory it created, so that the new directories survive a
// crash (a plain MkdirAll leaves their entries in the page cache). A nil
// fs is OS.
func MkdirAllSynced(fs FS, dir string, perm os.FileMode) error {
	fs = Default(fs)
	dir = filepath.Clean(dir)
	var missing []string
	for d := dir; ; {
		if _, err := fs.Stat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("mkdir %s: %w", dir, err)
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, perm); err != nil {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	for i := len(missing) - 1; i >= 0; i-- { // outermost first
		if err := fs.SyncDir(filepath.Dir(missing[i])); err != nil {
			return fmt.Errorf("mkdir %s: sync parent: %w", missing[i], err)
		}
	}
	return nil
}

// WriteFileAtomic replaces path with data so that a crash leaves either the
// old or the new content: it writes a temporary file in the same directory,
// fsyncs it, renames it over path and fsyncs the directory. The directory
// must exist. On error the temporary file is removed. A nil fs is OS.
func WriteFileAtomic(fs FS, path string, data []byte, perm os.FileMode) (err error) {
	fs = Default(fs)
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	tmp := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(suffix[:]))
	f, err := fs.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				_ = f.Close()
			}
			_ = fs.Remove(tmp)
		}
	}()
	if _, err = f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("atomic write %s: sync: %w", path, err)
	}
	closed = true
	if err = f.Close(); err != nil {
		return fmt.Errorf("atomic write %s: close: %w", path, err)
	}
	if err = fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	if err = fs.SyncDir(dir); err != nil {
		return fmt.Errorf("atomic write %s: sync dir: %w", path, err)
	}
	return nil
}
