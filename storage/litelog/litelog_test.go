package litelog

import (
	"os"
	"slices"
	"testing"
)

func records() []Record {
	return []Record{
		{Kind: KindCheckpoint, Offset: 100},
		{Kind: KindMessage, Offset: 120, Ms: 5, Parent: "chats", Lite: "s1"},
		{Kind: KindMessage, Offset: 300, Ms: 6, Parent: "chats", Lite: "s2"},
		{Kind: KindAck, Offset: 120, Ms: 7, Parent: "chats", Lite: "s1", Group: "g"},
		{Kind: KindExpire, Ms: 8, Parent: "chats", Lite: "s2"},
	}
}

func readAll(t *testing.T, dir string) []Record {
	t.Helper()
	var out []Record
	if err := Read(dir, func(r *Record) { out = append(out, *r) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRoundTripAndTornTail: records written come back in order; a torn
// tail (a record cut short, then garbage) ends the replay, Open cuts it
// off, and appends go on after the last good record.
func TestRoundTripAndTornTail(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, func(*Record) { t.Fatal("a new log has records") })
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(records()); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dir); !slices.Equal(got, records()) {
		t.Fatalf("read %v", got)
	}
	good, _ := os.Stat(Path(dir))
	torn := Append(nil, &Record{Kind: KindMessage, Offset: 999, Parent: "chats", Lite: "s3"})
	f, _ := os.OpenFile(Path(dir), os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.Write(torn[:len(torn)-3])
	_ = f.Close()
	if got := readAll(t, dir); !slices.Equal(got, records()) {
		t.Fatalf("with a torn tail: %v", got)
	}
	var n int
	l, err = Open(dir, func(*Record) { n++ })
	if err != nil || n != len(records()) {
		t.Fatalf("reopen: %d records, %v", n, err)
	}
	if st, _ := os.Stat(Path(dir)); st.Size() != good.Size() {
		t.Fatalf("torn tail not cut: %d, want %d", st.Size(), good.Size())
	}
	extra := Record{Kind: KindAck, Offset: 300, Parent: "chats", Lite: "s2", Group: "g"}
	if err := l.Write([]Record{extra}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dir); !slices.Equal(got, append(records(), extra)) {
		t.Fatalf("after the cut: %v", got)
	}
}

// TestCorruptRecordEndsReplay: a flipped byte fails the CRC: the records
// before it are read, none after.
func TestCorruptRecordEndsReplay(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, func(*Record) {})
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Write(records())
	_ = l.Close()
	b, _ := os.ReadFile(Path(dir))
	second := len(Magic) + len(Append(nil, &records()[0]))
	b[second+12] ^= 0xff
	_ = os.WriteFile(Path(dir), b, 0o644)
	if got := readAll(t, dir); !slices.Equal(got, records()[:1]) {
		t.Fatalf("read %v", got)
	}
}

// TestCompact: the log holds only the live records afterwards, and appends
// go on.
func TestCompact(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, func(*Record) {})
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Write(records())
	live := records()[1:2]
	if err := l.Compact(live); err != nil {
		t.Fatal(err)
	}
	more := records()[3]
	_ = l.Write([]Record{more})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dir); !slices.Equal(got, []Record{live[0], more}) {
		t.Fatalf("after compaction: %v", got)
	}
	if _, err := os.Stat(Path(dir) + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
}

// FuzzReplay: replaying any bytes never panics.
func FuzzReplay(f *testing.F) {
	var seed []byte
	seed = append(seed, Magic...)
	for _, r := range records() {
		seed = Append(seed, &r)
	}
	f.Add(seed)
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(Path(dir), b, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = Read(dir, func(*Record) {})
	})
}
