//go:build !linux

package aclfile

import "os"

// statKey is what says a file changed: its size and modification time
// (wheelmq reads inodes on Linux only).
func statKey(fi os.FileInfo) fileKey {
	return fileKey{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
