package commitlog

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage/vfs"
	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
)

// copyRaw streams master's log from the replica's end into the replica the
// way the replication sender and receiver do, with spans of at most max
// bytes, and returns the number of spans.
func copyRaw(t testing.TB, master, replica *CommitLog, max int) int {
	t.Helper()
	spans := 0
	off := replica.MaxOffset()
	for {
		b, next, err := master.ReadRaw(off, max)
		if errors.Is(err, io.EOF) {
			return spans
		}
		if err != nil {
			t.Fatalf("ReadRaw(%d): %v", off, err)
		}
		if len(b) > 0 {
			if err := replica.AppendRaw(off, b); err != nil {
				t.Fatalf("AppendRaw(%d, %d bytes): %v", off, len(b), err)
			}
			spans++
		}
		off = next
	}
}

// dirImage returns every segment file's bytes in fs under dir, by name.
func dirImage(t testing.TB, fs vfs.FS, dir string) map[string][]byte {
	t.Helper()
	entries, err := vfs.Default(fs).ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := vfs.ReadFile(fs, filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// sameImage fails unless two directory images are byte-identical.
func sameImage(t testing.TB, a, b map[string][]byte) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d files vs %d", len(a), len(b))
	}
	for name, x := range a {
		if !bytes.Equal(x, b[name]) {
			t.Fatalf("file %s differs (%d vs %d bytes)", name, len(x), len(b[name]))
		}
	}
}

func TestAppendRawByteIdentical(t *testing.T) {
	// 256-byte segments; entries of 128 fill a segment exactly, 124 leave a
	// blank marker of 8, 126 leave 4 bytes where nothing is written.
	for _, tc := range []struct {
		name  string
		sizes []int
	}{
		{"exact", []int{124, 124, 124, 124, 124}},
		{"blank", []int{120, 120, 120, 120, 120}},
		{"short-tail", []int{122, 122, 122, 122, 122}},
		{"mixed", []int{36, 200, 60, 100, 44, 120, 90, 36, 250, 37, 122, 122}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, max := range []int{1, 100, 1 << 20} {
				mdir, rdir := t.TempDir(), t.TempDir()
				m := mustOpen(t, mdir, Options{SegmentSize: 256})
				r := mustOpen(t, rdir, Options{SegmentSize: 256})
				// Stream in two rounds: the replica catches up mid-way.
				half := len(tc.sizes) / 2
				mustAppend(t, m, makeRecords(0, tc.sizes[:half]...))
				copyRaw(t, m, r, max)
				mustAppend(t, m, makeRecords(half, tc.sizes[half:]...))
				copyRaw(t, m, r, max)
				if r.MaxOffset() != m.MaxOffset() && r.MaxOffset() != m.MaxOffset()-m.MaxOffset()%256+256 {
					t.Fatalf("replica max %d, master %d", r.MaxOffset(), m.MaxOffset())
				}
				recs, _ := readAll(t, r)
				checkSeqs(t, recs, len(tc.sizes))
				if err := m.Sync(); err != nil {
					t.Fatal(err)
				}
				if err := r.Sync(); err != nil {
					t.Fatal(err)
				}
				mi, ri := dirImage(t, nil, mdir), dirImage(t, nil, rdir)
				// A replica that got a trailing blank already has the next
				// (empty) segment; the master creates it with its next record.
				for name, b := range ri {
					if _, ok := mi[name]; !ok && len(b) == 0 {
						delete(ri, name)
					}
				}
				sameImage(t, mi, ri)
				// The replica reopens to the same end with nothing cut.
				want := r.MaxOffset()
				_ = r.Close()
				r2 := mustOpen(t, rdir, Options{SegmentSize: 256})
				if r2.Recovery().TruncatedAt >= 0 || r2.MaxOffset() != want {
					t.Fatalf("reopen: max %d want %d, recovery %+v", r2.MaxOffset(), want, r2.Recovery())
				}
			}
		})
	}
}

func TestAppendRawRefuses(t *testing.T) {
	m := mustOpen(t, t.TempDir(), Options{SegmentSize: 256})
	mustAppend(t, m, makeRecords(0, 100, 100))
	b, _, err := m.ReadRaw(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, t.TempDir(), Options{SegmentSize: 256})
	if err := r.AppendRaw(104, b[104:]); !errors.Is(err, ErrNotAtEnd) {
		t.Fatalf("append at 104 of an empty log: %v", err)
	}
	bad := bytes.Clone(b)
	bad[50] ^= 1
	if err := r.AppendRaw(0, bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flipped bit: %v", err)
	}
	if err := r.AppendRaw(0, b[:150]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("half an entry: %v", err)
	}
	if r.MaxOffset() != 0 {
		t.Fatalf("refused appends moved max to %d", r.MaxOffset())
	}
	if err := r.AppendRaw(0, b); err != nil {
		t.Fatal(err)
	}
	if err := r.AppendRaw(0, b); !errors.Is(err, ErrNotAtEnd) {
		t.Fatalf("duplicate span: %v", err)
	}
}

func TestTruncate(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, dir, Options{SegmentSize: 256})
	offs := mustAppend(t, c, makeRecords(0, 100, 100, 100, 100, 100, 100, 100))
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := c.Truncate(c.MaxOffset() + 1); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("past the end: %v", err)
	}
	// Cut mid-segment: record 3 and everything after go.
	if err := c.Truncate(offs[3]); err != nil {
		t.Fatal(err)
	}
	if c.MaxOffset() != offs[3] || c.FlushedOffset() != offs[3] {
		t.Fatalf("max %d flushed %d, want %d", c.MaxOffset(), c.FlushedOffset(), offs[3])
	}
	if n := len(segmentFiles(t, dir)); n != 2 {
		t.Fatalf("%d segment files after the cut, want 2", n)
	}
	recs, _ := readAll(t, c)
	checkSeqs(t, recs, 3)
	// Appends go on from the cut, and a reopen agrees.
	mustAppend(t, c, makeRecords(3, 100, 100))
	// Cut at a segment base (record 2 opened segment 256).
	if offs[2] != 256 {
		t.Fatalf("layout changed: record 2 at %d", offs[2])
	}
	if err := c.Truncate(256); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, makeRecords(2, 100))
	_ = c.Close()
	c2 := mustOpen(t, dir, Options{SegmentSize: 256})
	recs, _ = readAll(t, c2)
	checkSeqs(t, recs, 3)
	if c2.Recovery().TruncatedAt >= 0 {
		t.Fatalf("recovery cut: %+v", c2.Recovery())
	}
}

// TestRawPowerCut streams into a replica on crashfs and cuts power at
// random points: the replica recovers to a prefix of the master's log that
// ends on an entry boundary and includes everything it had synced, and the
// stream resumes from there to a byte-identical log.
func TestRawPowerCut(t *testing.T) {
	rng := rand.New(rand.NewSource(seed(t)))
	mdir := t.TempDir()
	m := mustOpen(t, mdir, Options{SegmentSize: 512})
	for i := 0; i < 40; i++ {
		mustAppend(t, m, makeRecords(i, 36+rng.Intn(200)))
	}
	fs := crashfs.New()
	r := mustOpen(t, "/r", Options{SegmentSize: 512, FS: fs})
	for round := 0; round < 20; round++ {
		off := r.MaxOffset()
		var synced int64 = r.FlushedOffset()
		for steps := rng.Intn(6); steps > 0; steps-- {
			b, next, err := m.ReadRaw(off, 1+rng.Intn(300))
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > 0 {
				if err := r.AppendRaw(off, b); err != nil {
					t.Fatal(err)
				}
			}
			off = next
			if rng.Intn(3) == 0 {
				if err := r.Sync(); err != nil {
					t.Fatal(err)
				}
				synced = r.FlushedOffset()
			}
		}
		if rng.Intn(4) == 0 && r.MaxOffset() > 0 {
			// A truncation to an earlier boundary (a consistent point).
			_, offsets := readAll(t, r)
			cut := offsets[rng.Intn(len(offsets))]
			if err := r.Truncate(cut); err != nil {
				t.Fatal(err)
			}
			synced = min(synced, cut)
		}
		fs = fs.CrashRandom(rng)
		// Recovery starts at the synced end, as storage.Open does with its
		// checkpoint: bytes above it may be missing in any segment.
		r = mustOpen(t, "/r", Options{SegmentSize: 512, FS: fs})
		if r.MaxOffset() < synced {
			t.Fatalf("round %d: recovered to %d, below synced %d", round, r.MaxOffset(), synced)
		}
		if len(r.Recovery().Damaged) > 0 {
			t.Fatalf("round %d: damage after a power cut: %+v", round, r.Recovery().Damaged)
		}
		recs, _ := readAll(t, r)
		checkSeqs(t, recs, len(recs))
	}
	copyRaw(t, m, r, 1<<20)
	recs, _ := readAll(t, r)
	checkSeqs(t, recs, 40)
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(); err != nil {
		t.Fatal(err)
	}
	mi, ri := dirImage(t, nil, mdir), dirImage(t, fs, "/r")
	for name, b := range ri {
		if _, ok := mi[name]; !ok && len(b) == 0 {
			delete(ri, name)
		}
	}
	sameImage(t, mi, ri)
}

// seed returns the random seed for a test (COMMITLOG_SEED replays one) and
// logs it.
func seed(t testing.TB) int64 {
	t.Helper()
	s := time.Now().UnixNano()
	if v := os.Getenv("COMMITLOG_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("COMMITLOG_SEED: %v", err)
		}
		s = n
	}
	t.Logf("seed %d (COMMITLOG_SEED replays it)", s)
	return s
}
