package index

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// FuzzRecover damages a valid index (bytes written over or appended to one
// of its files) and checks that Open recovers without panicking, that every
// hit points at a real record of the key, and that re-indexing from the
// recovered position makes every record findable exactly once.
func FuzzRecover(f *testing.F) {
	f.Add([]byte{0xff}, uint16(20), uint8(0), false)
	f.Add(make([]byte, 64), uint16(0), uint8(5), false)
	f.Add(make([]byte, 40), uint16(0), uint8(5), true)
	f.Add([]byte("WMIX"), uint16(64), uint8(2), false)
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint16(200), uint8(1), false)
	f.Fuzz(func(t *testing.T, data []byte, at uint16, which uint8, appendIt bool) {
		const n = 13
		dir := t.TempDir()
		o := small
		o.FS = vfstest.NoSyncFS{}
		ix, err := Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		addAll(t, ix, series(0, n))
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		names := files(t, dir)
		path := filepath.Join(dir, names[int(which)%len(names)])
		fh, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := fh.Stat()
		off := int64(at) % (st.Size() + 1)
		if appendIt {
			off = st.Size()
		}
		if _, err := fh.WriteAt(data, off); err != nil {
			t.Fatal(err)
		}
		fh.Close()

		ix, err = Open(dir, o)
		if err != nil {
			t.Fatalf("Open after damage: %v", err)
		}
		defer ix.Close()
		pos := ix.Position()
		if pos < 0 || pos > n*100 {
			t.Fatalf("Position %d outside [0, %d]", pos, n*100)
		}
		for i := 0; i < n; i++ {
			hits, _ := ix.Lookup("T", fmt.Sprintf("k%d", i), 0, 1<<62, 64)
			for _, h := range hits {
				if h.Offset != int64(i)*100 || h.StoreTimestamp != 1_000_000+int64(i)*1000 {
					t.Fatalf("k%d: hit %+v is not its record", i, h)
				}
			}
		}
		start := int(pos / 100)
		if pos%100 != 0 {
			start++
		}
		if start < n {
			addAll(t, ix, series(start, n-start))
		}
		for i := start; i < n; i++ {
			hits, err := ix.Lookup("T", fmt.Sprintf("k%d", i), 0, 1<<62, 64)
			if err != nil || len(hits) != 1 || hits[0].Offset != int64(i)*100 {
				t.Fatalf("k%d after re-indexing from %d: %v, %v", i, pos, hits, err)
			}
		}
	})
}
