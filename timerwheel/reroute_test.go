package timerwheel

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/wheelmq/wheelmq/timerwheel/checkpoint"
)

// TestMinCommitLogOffsetFollowsDelivery: delivered timers stop pinning the
// CommitLog once their acknowledgement is durable; cancels never pin.
func TestMinCommitLogOffsetFollowsDelivery(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	cancel := Timer{Kind: KindCancel, DeliverMs: T0 + 3_600_000, CommitLogOffset: 60, QueueOffset: 60, Size: 90,
		KeyHash: HashKey("TopicA+nothing")}
	mustAdd(t, s, T0, timerAt(50, T0+1000), cancel, timerAt(100, T0+3_600_000), timerAt(200, T0+3_600_500))
	if off, ok := s.MinCommitLogOffset(); !ok || off != 50 {
		t.Fatalf("min %d %v, want 50", off, ok)
	}
	h := newHarness(t, s)
	h.run(T0, T0+10_000)
	for i := 0; i < 3; i++ { // both checkpoint copies past the delivered slot
		must(t, s.Flush())
	}
	if off, ok := s.MinCommitLogOffset(); !ok || off != 100 {
		t.Fatalf("after delivery min %d %v, want 100", off, ok)
	}
}

// TestReroute points far timers at relocated messages and checks the
// CommitLog pin, recovery (with and without a snapshot), and that the
// timers are still delivered at their time with the new references.
func TestReroute(t *testing.T) {
	for _, tc := range []struct {
		name          string
		snapshotEvery int
	}{{"replay", 0}, {"snapshot", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := testOptions(dir)
			opts.SnapshotEvery = tc.snapshotEvery
			s := openStore(t, opts, T0)
			due := T0 + 3*3_600_000
			mustAdd(t, s, T0, timerAt(100, due), timerAt(200, due+10), timerAt(5000, due+20))
			mustAdd(t, s, T0+1, timerAt(6000, due+5*3_600_000)) // another bucket, not pinned below 1000
			pinned := s.PinnedFar(1000)
			if len(pinned) != 1 || pinned[0].MinCommitLogOffset != 100 || pinned[0].Records != 3 {
				t.Fatalf("PinnedFar: %+v", pinned)
			}
			below, err := s.FarTimersBelow(pinned[0].Bucket, 1000)
			if err != nil || len(below) != 2 {
				t.Fatalf("FarTimersBelow: %+v %v", below, err)
			}
			n, err := s.Reroute(pinned[0].Bucket, map[int64]Relocation{100: {9000, 120}, 200: {9200, 121}})
			if err != nil || n != 2 {
				t.Fatalf("Reroute: %d %v", n, err)
			}
			if off, _ := s.MinCommitLogOffset(); off != 5000 {
				t.Fatalf("min after reroute %d, want 5000", off)
			}
			if got := s.PinnedFar(1000); len(got) != 0 {
				t.Fatalf("still pinned: %+v", got)
			}
			must(t, s.Flush())
			if st := s.Stats(); st.Rerouted != 2 || st.Pending != 4 {
				t.Fatalf("stats %+v", st)
			}
			crash := t.TempDir()
			copyDir(t, dir, crash)
			s2 := openStore(t, Options{Dir: crash, SegmentSize: opts.SegmentSize, NoSync: true}, T0+2)
			if off, _ := s2.MinCommitLogOffset(); off != 5000 {
				t.Fatalf("min after recovery %d, want 5000", off)
			}
			h := newHarness(t, s2)
			h.run(T0+2, due+30)
			want := map[int64]struct {
				at   int64
				size int32
			}{9000: {due, 120}, 9200: {due + 10, 121}, 5000: {due + 20, 100}}
			if len(h.out) != 3 {
				t.Fatalf("released %d timers, want 3: %+v", len(h.out), h.out)
			}
			for _, r := range h.out {
				w, ok := want[r.CommitLogOffset]
				if !ok || r.DeliverMs != w.at || r.Size != w.size || r.at < w.at {
					t.Fatalf("released %+v, want one of %+v", r, want)
				}
			}
		})
	}
}

// TestRerouteGoneBucket: a bucket that left the far wheel (relinked) is
// not rerouted; its timers keep their references.
func TestRerouteGoneBucket(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	mustAdd(t, s, T0, timerAt(100, T0+3_600_000))
	b := s.PinnedFar(1000)[0].Bucket
	h := newHarness(t, s)
	h.run(T0, T0+3_600_000-60_000) // the bucket is relinked ahead of its time
	if n, err := s.Reroute(b, map[int64]Relocation{100: {9000, 120}}); err != nil || n != 0 {
		t.Fatalf("Reroute of a relinked bucket: %d %v", n, err)
	}
	if off, _ := s.MinCommitLogOffset(); off != 100 {
		t.Fatalf("min %d, want 100 (now in the near wheel)", off)
	}
}

// TestVersion1SnapshotPin opens a store whose snapshot is in format
// version 1: the slots' bounds come from the TimerLog segments, which is
// at or below the exact one.
func TestVersion1SnapshotPin(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	opts.SnapshotEvery = 1
	s := openStore(t, opts, T0)
	mustAdd(t, s, T0, timerAt(300, T0+7_200_000), timerAt(700, T0+3_600_000))
	must(t, s.Flush())
	path := filepath.Join(dir, snapshotName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crash := t.TempDir()
	copyDir(t, dir, crash)
	if err := os.WriteFile(filepath.Join(crash, snapshotName), snapshotV1(t, b), 0o640); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, Options{Dir: crash, SegmentSize: opts.SegmentSize, NoSync: true}, T0)
	if off, _ := s2.MinCommitLogOffset(); off != 300 {
		t.Fatalf("min from a version 1 snapshot %d, want 300", off)
	}
	if got := s2.PinnedFar(301); len(got) != 2 {
		t.Fatalf("version 1 bounds are per segment: both buckets pinned below 301, got %+v", got)
	}
}

// snapshotV1 rewrites a version 2 snapshot file in version 1 (32-byte
// slots without the minimum CommitLog offset).
func snapshotV1(t *testing.T, b []byte) []byte {
	t.Helper()
	sn, err := checkpoint.DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(nil), b[:112]...)
	out[8] = 1
	p := 112
	for i := 0; i < len(sn.Near)+len(sn.Far); i++ {
		out = append(out, b[p:p+32]...)
		p += 40
	}
	out = append(out, b[p:len(b)-4]...)
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, crc32.MakeTable(crc32.Castagnoli)))
}
