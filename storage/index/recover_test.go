package index

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs"
	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// synced builds an index of series(0, n), synced and closed, and returns
// its directory.
func synced(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	ix, err := Open(dir, small)
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, ix, series(0, n))
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// newestHeaderCopy returns the byte offset of a file's newest header copy.
func newestHeaderCopy(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [headerRegion]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		t.Fatal(err)
	}
	best, at := uint64(0), int64(-1)
	for c := 0; c < headerCopies; c++ {
		if h, ok := decodeHeader(b[c*headerSize:]); ok && (at < 0 || h.generation > best) {
			best, at = h.generation, int64(c*headerSize)
		}
	}
	if at < 0 {
		t.Fatalf("%s has no valid header", path)
	}
	return at
}

func TestTornTailIsCut(t *testing.T) {
	garbage := make([]byte, entrySize)
	for i := range garbage {
		garbage[i] = byte(i*7 + 1)
	}
	tests := []struct {
		name string
		tail []byte
	}{
		{"partial entry", garbage[:17]},
		{"zeroed entries", make([]byte, 3*entrySize)},
		{"garbage entry", garbage},
		{"garbage entry and a partial one", append(append([]byte{}, garbage...), garbage[:5]...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := synced(t, 13) // 33 entries: the active file holds 1
			last := lastFile(t, dir)
			size := fileSize(t, last)
			appendBytes(t, last, tt.tail)
			ix := mustOpen(t, dir, small)
			if got := fileSize(t, last); got != size {
				t.Errorf("active file is %d bytes after recovery, want %d", got, size)
			}
			if got := lookup(t, ix, "T", "all", 0, 1<<62, 64); !equal(got, offsets(rangeIdx(0, 13, 1)...)) {
				t.Errorf("after recovery: %v", got)
			}
			addAll(t, ix, series(13, 3))
			if got := lookup(t, ix, "T", "k15", 0, 1<<62, 64); !equal(got, offsets(15)) {
				t.Errorf("indexing after recovery: k15 = %v", got)
			}
		})
	}
}

func TestTornEntryInsideTheActiveFile(t *testing.T) {
	dir := t.TempDir()
	ix := mustOpen(t, dir, Options{Slots: 4, MaxEntries: 1000})
	addAll(t, ix, series(0, 10))
	if err := ix.Sync(); err != nil {
		t.Fatal(err)
	}
	addAll(t, ix, series(10, 10)) // flushed, not synced
	ix.closed = true
	_ = ix.closeFiles()
	// Damage an unsynced entry in the middle: everything from it is cut, and
	// the rest beyond the durable position goes anyway.
	last := lastFile(t, dir)
	writeAt(t, last, entriesStart(4)+int64(30)*entrySize+3, []byte{0xFF, 0xFE})
	ix2 := mustOpen(t, dir, Options{Slots: 4, MaxEntries: 1000})
	if got := lookup(t, ix2, "T", "all", 0, 1<<62, 64); !equal(got, offsets(rangeIdx(0, 10, 1)...)) {
		t.Errorf("after recovery: %v", got)
	}
	// Damage a synced entry (bit rot): entries from it on are lost, the
	// index still opens and keeps what precedes.
	writeAt(t, last, entriesStart(4)+int64(5)*entrySize+3, []byte{0xFF, 0xFE})
	ix2.Close()
	ix3 := mustOpen(t, dir, Options{Slots: 4, MaxEntries: 1000})
	if got := lookup(t, ix3, "T", "all", 0, 1<<62, 64); !equal(got, offsets(0, 1)) {
		t.Errorf("after bit rot in entry 6: %v, want the records before it", got)
	}
}

func TestTornNewestHeaderFallsBack(t *testing.T) {
	dir := synced(t, 13)
	ix := mustOpen(t, dir, small)
	pos := ix.Position()
	addAll(t, ix, series(13, 1))
	if err := ix.Sync(); err != nil { // a newer header with a newer position
		t.Fatal(err)
	}
	ix.Close()
	last := lastFile(t, dir)
	writeAt(t, last, newestHeaderCopy(t, last)+20, []byte{0xAA})
	ix2 := mustOpen(t, dir, small)
	if ix2.Position() != pos {
		t.Errorf("Position = %d, want the previous header's %d", ix2.Position(), pos)
	}
	if got := lookup(t, ix2, "T", "k13", 0, 1<<62, 64); len(got) != 0 {
		t.Errorf("an entry above the surviving position was kept: %v", got)
	}
}

func TestFileWithoutValidHeaderIsDropped(t *testing.T) {
	dir := synced(t, 13) // files 1-5 sealed, 6 active
	fs := files(t, dir)
	third := filepath.Join(dir, fs[2])
	// Destroy both header copies of the third file: it and every later file
	// go; the position falls back to the second file's.
	writeAt(t, third, 0, make([]byte, headerRegion))
	ix := mustOpen(t, dir, small)
	// File 2 was sealed when record 6's second key did not fit: its header
	// holds position 600, so record 6's first key (in file 2) is cut too.
	if ix.Position() != 600 {
		t.Errorf("Position = %d, want 600 (from the second file's sealed header)", ix.Position())
	}
	if got := lookup(t, ix, "T", "all", 0, 1<<62, 64); !equal(got, offsets(rangeIdx(0, 6, 1)...)) {
		t.Errorf("after losing file 3: %v", got)
	}
	if got := lookup(t, ix, "T", "k6", 0, 1<<62, 64); len(got) != 0 {
		t.Errorf("k6 is above the position and must be cut: %v", got)
	}
	if n := len(files(t, dir)); n != 2 {
		t.Errorf("%d files, want 2 (the second one active again)", n)
	}
	// Re-indexing from the position restores everything exactly once.
	var rest []rec
	for _, r := range series(0, 13) {
		if r.off >= ix.Position() {
			rest = append(rest, r)
		}
	}
	addAll(t, ix, rest)
	if got := lookup(t, ix, "T", "all", 0, 1<<62, 64); !equal(got, offsets(rangeIdx(0, 13, 1)...)) {
		t.Errorf("after re-indexing: %v", got)
	}
}

func TestCrashWhileSealingIsResealed(t *testing.T) {
	dir := synced(t, 13)
	fs := files(t, dir)
	second := filepath.Join(dir, fs[1])
	// Undo the sealed header: the older copy (unsealed) wins, as if the
	// process died before the sealed header reached the disk.
	writeAt(t, second, newestHeaderCopy(t, second)+20, []byte{0xAA})
	ix := mustOpen(t, dir, small)
	if got := lookup(t, ix, "T", "all", 0, 1<<62, 64); !equal(got, offsets(rangeIdx(0, 13, 1)...)) {
		t.Errorf("after resealing: %v", got)
	}
	ix.Close()
	f, err := vfs.OS{}.OpenFile(second, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, ok, err := readHeader(f)
	f.Close()
	if err != nil || !ok || !h.sealed() || h.entries != 8 {
		t.Errorf("second file header %+v ok=%v err=%v, want sealed with 8 entries", h, ok, err)
	}
}

func TestDamagedSealedFileIsRescanned(t *testing.T) {
	dir := synced(t, 13)
	fs := files(t, dir)
	second := filepath.Join(dir, fs[1])
	// Bit rot in the last entry of a sealed file: that entry is lost, the
	// file is rescanned and sealed again, everything else survives.
	writeAt(t, second, entriesStart(4)+7*entrySize+2, []byte{0x55})
	ix := mustOpen(t, dir, small)
	got := lookup(t, ix, "T", "all", 0, 1<<62, 64)
	if len(got) < 12 || got[len(got)-1] != 1200 {
		t.Errorf("after rescanning a damaged sealed file: %v", got)
	}
}

func TestWriteFaultsAreStickyAndRecover(t *testing.T) {
	for _, fault := range []string{"write", "sync"} {
		t.Run(fault, func(t *testing.T) {
			dir := t.TempDir()
			fs := &vfstest.FaultFS{}
			o := small
			o.FS = fs
			ix, err := Open(dir, o)
			if err != nil {
				t.Fatal(err)
			}
			addAll(t, ix, series(0, 5))
			if err := ix.Sync(); err != nil {
				t.Fatal(err)
			}
			pos := ix.Position()
			for _, r := range series(5, 10) {
				for _, k := range r.keys {
					if err := ix.Add(r.topic, k, r.off, r.ts); err != nil {
						t.Fatal(err)
					}
				}
			}
			if fault == "write" {
				fs.FailWrite(1)
				err = ix.Flush(1500)
			} else {
				if err := ix.Flush(1500); err != nil {
					t.Fatal(err)
				}
				fs.FailSync(1)
				err = ix.Sync()
			}
			if !fs.Hit() || !errors.Is(err, ErrFailed) {
				t.Fatalf("%s fault: %v (hit %v), want ErrFailed", fault, err, fs.Hit())
			}
			if err := ix.Flush(1600); !errors.Is(err, ErrFailed) {
				t.Errorf("Flush after a failure = %v, want ErrFailed", err)
			}
			if fault == "write" && !errors.Is(err, syscall.ENOSPC) && !errors.Is(ix.failed, syscall.ENOSPC) {
				t.Errorf("the cause is lost: %v", ix.failed)
			}
			_ = ix.Close()
			fs.Reset()
			ix2 := mustOpen(t, dir, o)
			// At least what was synced; more when a full file was sealed
			// (sealing makes its entries durable).
			p2 := ix2.Position()
			if p2 < pos || p2 > 1500 || p2%100 != 0 {
				t.Fatalf("Position after reopen = %d, want a record boundary in [%d, 1500]", p2, pos)
			}
			addAll(t, ix2, series(int(p2/100), 15-int(p2/100)))
			if got := lookup(t, ix2, "T", "all", 0, 1<<62, 64); !equal(got, offsets(rangeIdx(0, 15, 1)...)) {
				t.Errorf("after recovery and re-indexing: %v", got)
			}
		})
	}
}

func TestForeignFilesIgnored(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"notes.txt", "00000000000000000001.tmp", "0000000000000000000x.idx", "00000000000000000000.idx"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ix := mustOpen(t, dir, small)
	addAll(t, ix, series(0, 2))
	if got := lookup(t, ix, "T", "all", 0, 1<<62, 64); !equal(got, offsets(0, 1)) {
		t.Errorf("lookup = %v", got)
	}
}
