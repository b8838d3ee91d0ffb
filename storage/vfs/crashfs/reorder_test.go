package crashfs

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// records returns the content of n fixed-size records "r0000000".."rN".
func records(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "r%07d", i)
	}
	return b.String()
}

// appendRecords writes records [from, to) at their offsets, one write each.
func appendRecords(t *testing.T, f vfs.File, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		_, err := f.WriteAt([]byte(records(i, i+1)), int64(i*8))
		must(t, err)
	}
}

// prefixLen returns k when got is exactly records(0, k), else -1.
func prefixLen(got string) int {
	if len(got)%8 != 0 || got != records(0, len(got)/8) {
		return -1
	}
	return len(got) / 8
}

// TestReorderCrash: the CommitLog keeps its durable state, a derived file
// independently any prefix of its writes since its last sync, so over many
// crashes the derived file is seen ahead of the CommitLog, at its durable
// state and at its current one.
func TestReorderCrash(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (CRASHFS_SEED replays)", seed)
	seen := map[string]int{}
	for i := 0; i < 300; i++ {
		r := rand.New(rand.NewSource(seed + int64(i)))
		fs := New()
		must(t, vfs.MkdirAllSynced(fs, "/data/commitlog", 0o755))
		must(t, vfs.MkdirAllSynced(fs, "/data/cq", 0o755))
		log := write(t, fs, "/data/commitlog/0000", "", 0, false)
		cq := write(t, fs, "/data/cq/0", "", 0, false)
		must(t, fs.SyncDir("/data/commitlog"))
		must(t, fs.SyncDir("/data/cq"))
		// The store's order: the log written and synced, then the derived
		// file written (and synced less often).
		appendRecords(t, log, 0, 10)
		must(t, log.Sync())
		appendRecords(t, cq, 0, 10)
		must(t, cq.Sync())
		appendRecords(t, log, 10, 20) // never synced
		appendRecords(t, cq, 10, 20)

		after := fs.CrashReorder(r, ReorderOptions{})
		l, c := prefixLen(content(t, after, "/data/commitlog/0000")), prefixLen(content(t, after, "/data/cq/0"))
		if l != 10 {
			t.Fatalf("seed %d: the CommitLog kept %d records, its durable state has 10", seed+int64(i), l)
		}
		if c < 10 || c > 20 {
			t.Fatalf("seed %d: the derived file kept %d records: not a state between its durable (10) and current (20)", seed+int64(i), c)
		}
		switch {
		case c == 10:
			seen["durable"]++
		case c == 20:
			seen["current"]++
		default:
			seen["between"]++
		}
		if c > l {
			seen["ahead"]++
		}
	}
	t.Logf("derived file after 300 crashes: %v", seen)
	for _, k := range []string{"durable", "current", "between", "ahead"} {
		if seen[k] == 0 {
			t.Errorf("seed %d: no crash left the derived file %s", seed, k)
		}
	}
}

// TestReorderTearOrdered: with TearOrdered the CommitLog too keeps a prefix
// of its history, never less than its durable state, independently of the
// other files.
func TestReorderTearOrdered(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (CRASHFS_SEED replays)", seed)
	pairs := map[[2]bool]bool{}
	for i := 0; i < 200; i++ {
		r := rand.New(rand.NewSource(seed + int64(i)))
		fs := New()
		must(t, vfs.MkdirAllSynced(fs, "/commitlog", 0o755))
		log := write(t, fs, "/commitlog/0", records(0, 5), 0, true)
		must(t, fs.SyncDir("/commitlog"))
		idx := write(t, fs, "/index", records(0, 5), 0, true)
		must(t, fs.SyncDir("/"))
		appendRecords(t, log, 5, 9)
		appendRecords(t, idx, 5, 9)
		after := fs.CrashReorder(r, ReorderOptions{TearOrdered: true})
		l, x := prefixLen(content(t, after, "/commitlog/0")), prefixLen(content(t, after, "/index"))
		if l < 5 || l > 9 || x < 5 || x > 9 {
			t.Fatalf("seed %d: kept %d and %d records, want each in [5, 9]", seed+int64(i), l, x)
		}
		pairs[[2]bool{l > 5, x > l}] = true
	}
	if len(pairs) != 4 {
		t.Errorf("seed %d: the two files' fates are not independent: only %v seen", seed, pairs)
	}
}

// TestReorderPredicate: Ordered names the files kept in order.
func TestReorderPredicate(t *testing.T) {
	fs := New()
	f := write(t, fs, "/wal", "a", 0, true)
	must(t, fs.SyncDir("/"))
	_, err := f.WriteAt([]byte("bc"), 1)
	must(t, err)
	for seed := int64(0); seed < 50; seed++ {
		after := fs.CrashReorder(rand.New(rand.NewSource(seed)), ReorderOptions{Ordered: func(name string) bool { return name == "/wal" }})
		if got := content(t, after, "/wal"); got != "a" {
			t.Fatalf("seed %d: an Ordered file kept %q, its durable state is \"a\"", seed, got)
		}
	}
	for _, c := range []struct {
		name string
		want bool
	}{{"/d/commitlog/000", true}, {"commitlog/x", true}, {"/d/commitlogs/x", false}, {"/d/cq/commitlog", false}} {
		if got := IsCommitLog(c.name); got != c.want {
			t.Errorf("IsCommitLog(%q) = %v", c.name, got)
		}
	}
}

// TestReorderTruncation: truncations are points of the history like
// writes (a shrunk file regrown reads zeros in between).
func TestReorderTruncation(t *testing.T) {
	fs := New()
	f := write(t, fs, "/f", "0123456789", 0, true)
	must(t, fs.SyncDir("/"))
	must(t, f.Truncate(4))
	_, err := f.WriteAt([]byte("x"), 6)
	must(t, err)
	want := map[string]bool{"0123456789": false, "0123": false, "0123\x00\x00x": false}
	for seed := int64(0); seed < 100; seed++ {
		got := content(t, fs.CrashReorder(rand.New(rand.NewSource(seed)), ReorderOptions{}), "/f")
		if _, ok := want[got]; !ok {
			t.Fatalf("seed %d: kept %q, not one of the file's states %v", seed, got, want)
		}
		want[got] = true
	}
	for s, ok := range want {
		if !ok {
			t.Errorf("state %q never kept in 100 crashes", s)
		}
	}
}

// TestReorderFoldsLongHistory: a file written more often than maxHistory
// times without a sync keeps at least the state its folded changes left.
func TestReorderFoldsLongHistory(t *testing.T) {
	fs := New()
	f := write(t, fs, "/f", "", 0, false)
	must(t, fs.SyncDir("/"))
	appendRecords(t, f, 0, maxHistory+100)
	if n := len(f.(*file).ino.hist); n != maxHistory {
		t.Fatalf("history of %d changes, want it bounded to %d", n, maxHistory)
	}
	for seed := int64(0); seed < 20; seed++ {
		k := prefixLen(content(t, fs.CrashReorder(rand.New(rand.NewSource(seed)), ReorderOptions{}), "/f"))
		if k < 100 || k > maxHistory+100 {
			t.Fatalf("seed %d: kept %d records, want between the floor (100) and all (%d)", seed, k, maxHistory+100)
		}
	}
	must(t, f.Sync())
	if ino := f.(*file).ino; ino.hist != nil || ino.floor != nil {
		t.Fatal("Sync kept the history")
	}
}

// TestCrashesReplay: the same seed gives the same crash, for CrashRandom and
// CrashReorder, however many files there are.
func TestCrashesReplay(t *testing.T) {
	fs := New()
	must(t, vfs.MkdirAllSynced(fs, "/d/commitlog", 0o755))
	for i := 0; i < 20; i++ {
		f := write(t, fs, fmt.Sprintf("/d/f%02d", i), "", 0, false)
		appendRecords(t, f, 0, 600)
		g := write(t, fs, fmt.Sprintf("/d/commitlog/%02d", i), "", 0, false)
		appendRecords(t, g, 0, 600)
	}
	must(t, fs.SyncDir("/d"))
	must(t, fs.SyncDir("/d/commitlog"))
	dump := func(c *FS) string {
		var b bytes.Buffer
		for _, dir := range []string{"/d", "/d/commitlog"} {
			ents, err := c.ReadDir(dir)
			must(t, err)
			for _, e := range ents {
				if !e.IsDir() {
					fmt.Fprintf(&b, "%s/%s=%x;", dir, e.Name(), content(t, c, dir+"/"+e.Name()))
				}
			}
		}
		return b.String()
	}
	for seed := int64(0); seed < 5; seed++ {
		crashes := map[string]func(r *rand.Rand) *FS{
			"random":  fs.CrashRandom,
			"reorder": func(r *rand.Rand) *FS { return fs.CrashReorder(r, ReorderOptions{TearOrdered: true}) },
		}
		for name, crash := range crashes {
			a, b := dump(crash(rand.New(rand.NewSource(seed)))), dump(crash(rand.New(rand.NewSource(seed))))
			if a != b {
				t.Fatalf("%s crash with seed %d: two different outcomes", name, seed)
			}
		}
	}
}
