package index

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestIndexSkipsDamage damages a record in the middle of the CommitLog: the
// stage indexes the records around it instead of stopping.
func TestIndexSkipsDamage(t *testing.T) {
	r := newRig(t)
	var offs []int64
	for i := 0; i < 5; i++ {
		offs = append(offs, r.put(t, msg{topic: "T", keys: "order-1", ts: int64(1000 * (i + 1))}))
	}
	f, err := os.OpenFile(filepath.Join(r.st.CommitLog.Dir(), fmt.Sprintf("%020d", 0)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{0}
	pos := offs[2] + 60
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x33
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	r.start(t)
	r.caughtUp(t, r.st.CommitLog.MaxOffset())
	got := found(t, r.query(t, Query{Topic: "T", Key: "order-1", MaxNum: 10, End: all}))
	want := map[int64]bool{offs[0]: true, offs[1]: true, offs[3]: true, offs[4]: true}
	if len(got) != len(want) {
		t.Fatalf("found %v, want the 4 intact records %v", got, want)
	}
	for _, o := range got {
		if !want[o] {
			t.Fatalf("found %v, want the 4 intact records %v", got, want)
		}
	}
}
