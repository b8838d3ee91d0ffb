//go:build linux

package aclfile

import (
	"os"
	"syscall"
)

// statKey is what says a file changed: its size, modification and change
// times, and its identity (device, inode: a file replaced by a rename, as
// editors and config tools write, has a new inode even when size and
// mtime look the same).
func statKey(fi os.FileInfo) fileKey {
	k := fileKey{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.dev, k.ino = uint64(st.Dev), uint64(st.Ino)
		k.ctime = int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec)
	}
	return k
}
