package timerlog

import (
	"os"
	"testing"
)

// FuzzOpenTail writes ten committed records, replaces the bytes after the
// first five with the fuzz input (a torn, zeroed or garbage tail), and
// opens the log: Open must repair it without panicking, keep the five
// synced records (MinKeep), and accept appends afterwards.
func FuzzOpenTail(f *testing.F) {
	var whole []byte
	for _, r := range sampleRecords() {
		r.Flags |= FlagCommit
		whole = append(whole, RecordSize)
		whole = r.AppendEncode(whole)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 3*EntrySize+7))
	f.Add(whole)                // entries with the wrong sequences
	f.Add(whole[:EntrySize+40]) // and a partial one
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := t.TempDir()
		l, _, err := Open(Options{Dir: dir, SegmentSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		appendN(t, l, 10, 1)
		must(t, l.Close())
		p := tailPath(t, dir)
		data, err := os.ReadFile(p)
		must(t, err)
		must(t, os.WriteFile(p, append(data[:5*EntrySize], tail...), 0o640))
		l, _, err = Open(Options{Dir: dir, SegmentSize: 1 << 20, MinKeep: 5})
		if err != nil {
			t.Fatalf("open after damage: %v", err)
		}
		defer l.Close()
		if l.Last() < 5 {
			t.Fatalf("synced records lost: last %d", l.Last())
		}
		for seq := uint64(1); seq <= l.Last(); seq++ {
			if _, err := l.Read(seq); err != nil {
				t.Fatalf("read %d of %d: %v", seq, l.Last(), err)
			}
		}
		next := appendN(t, l, 3, 3)
		if r, err := l.Read(next + 2); err != nil || r.Seq != next+2 {
			t.Fatalf("append after repair: %+v %v", r, err)
		}
	})
}
