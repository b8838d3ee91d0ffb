package dispatch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/message"
)

// damageRig is a rig whose store can be closed, damaged on disk and opened
// again, with the corruption policy and counter under test.
type damageRig struct {
	*rig
	dir     string
	opts    storage.Options
	stopped chan any // reasons of stages the supervisor stopped for good
}

func newDamageRig(t *testing.T, policy corruption.Policy, segment int64) *damageRig {
	t.Helper()
	dir := t.TempDir()
	opts := storage.Options{SegmentSize: segment, UnitsPerFile: 8, OnCorruption: policy,
		Corruption: corruption.NewMetrics(prometheus.NewRegistry())}
	st, err := storage.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	dr := &damageRig{dir: dir, opts: opts, stopped: make(chan any, 4)}
	dr.rig = &rig{st: st, sys: stage.NewSystem(zerolog.Nop()), next: map[consumequeue.QueueID]int64{}}
	dr.metrics = stage.NewRegistry(prometheus.NewRegistry())
	dr.strat = supervisor.New(supervisor.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond,
		Fatal: []error{corruption.ErrStop}, OnStop: func(_ string, reason any) { dr.stopped <- reason }})
	t.Cleanup(func() {
		if dr.d != nil {
			dr.d.Stop()
		}
		dr.sys.Shutdown()
		_ = dr.st.Close()
	})
	return dr
}

// reopen closes the store and opens it again (recovery runs), keeping the
// rig's queue offsets.
func (dr *damageRig) reopen(t *testing.T) {
	t.Helper()
	if dr.d != nil {
		dr.stop()
	}
	if err := dr.st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(dr.dir, dr.opts)
	if err != nil {
		t.Fatal(err)
	}
	dr.st = st
	st.Dispatched.Store(StartOffset(st, zerolog.Nop()))
}

// flip inverts one byte of a file in place.
func flip(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// damageRecord flips a byte in the body of the record of u, on disk.
func damageRecord(t *testing.T, st *storage.Store, u consumequeue.Unit) {
	t.Helper()
	seg := st.CommitLog.SegmentSize()
	base := u.Offset / seg * seg
	flip(t, filepath.Join(st.CommitLog.Dir(), fmt.Sprintf("%020d", base)), u.Offset-base+int64(u.Size)-10)
}

// TestCommitLogDamageIsSkipped plants a damaged record in the middle of a
// real CommitLog (in the last segment, where recovery scans, and in an older
// one, where only the dispatcher meets it) and runs the dispatcher over it:
// with skip, the records after it are dispatched and readable, the queue
// offset of the lost record is a hole, and the bytes counted are exactly the
// damaged entry's; with stop, the stage stops at the damage.
func TestCommitLogDamageIsSkipped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  corruption.Policy
		segment int64
		reopen  bool
	}{
		{"skip, last segment, after recovery", corruption.PolicySkip, 1 << 20, true},
		{"skip, older segment, live", corruption.PolicySkip, 2048, false},
		{"stop, older segment, live", corruption.PolicyStop, 2048, false},
		{"stop, last segment, after recovery", corruption.PolicyStop, 1 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newDamageRig(t, tc.policy, tc.segment)
			var t0, t1 []consumequeue.Unit
			for i := 0; i < 30; i++ {
				t0 = append(t0, r.put(t, "T", 0, "a"))
				t1 = append(t1, r.put(t, "T", 1, "b"))
			}
			victim := t0[7]
			damageRecord(t, r.st, victim)
			if tc.reopen {
				r.reopen(t)
			}
			r.start(t, time.Hour)
			span := float64(victim.Size) + commitlog.EntryOverhead
			if tc.policy == corruption.PolicyStop {
				select {
				case reason := <-r.stopped:
					err, _ := reason.(error)
					if !errors.Is(err, corruption.ErrStop) || !errors.Is(err, commitlog.ErrCorrupt) {
						t.Fatalf("stage stopped with %v, want ErrStop and commitlog.ErrCorrupt", reason)
					}
				case <-time.After(wait):
					t.Fatal("dispatch did not stop at the damage")
				}
				if got := r.st.Queues.Lookup("T", 0).MaxOffset(); got != 7 {
					t.Fatalf("T/0 has %d units, want the 7 before the damage", got)
				}
				return
			}
			r.caughtUp(t)
			if got := float64(r.st.Corruption().Counted(corruption.FileCommitLog)); got != span {
				t.Fatalf("corrupt bytes counted %v, want the damaged entry's %v", got, span)
			}
			got := units(t, r.st, "T", 0)
			if len(got) != len(t0) {
				t.Fatalf("T/0 has %d units, want %d", len(got), len(t0))
			}
			for i, u := range got {
				if i == 7 {
					if !u.IsHole() || u.Offset <= got[6].Offset || u.Offset >= got[8].Offset {
						t.Fatalf("unit 7 = %+v, want a hole between its neighbours", u)
					}
					continue
				}
				if u != t0[i] {
					t.Fatalf("unit %d = %+v, want %+v", i, u, t0[i])
				}
				rec, err := r.st.CommitLog.ReadAt(u.Offset, u.Size)
				if err != nil {
					t.Fatalf("unit %d unreadable: %v", i, err)
				}
				if m, _, err := message.Decode(rec); err != nil || m.QueueOffset != int64(i) {
					t.Fatalf("unit %d holds queue offset %d (%v)", i, m.QueueOffset, err)
				}
			}
			if got := units(t, r.st, "T", 1); fmt.Sprint(got) != fmt.Sprint(t1) {
				t.Fatalf("T/1 units differ: %v", got)
			}
			// New records after the damage are dispatched as usual.
			u := r.put(t, "T", 0, "a")
			r.kicker.Kick()
			r.caughtUp(t)
			if got := units(t, r.st, "T", 0); got[len(got)-1] != u {
				t.Fatalf("new record not dispatched: last unit %+v, want %+v", got[len(got)-1], u)
			}
		})
	}
}

// TestUndecodableRecordIsSkipped stores a record that passes the
// CommitLog's checks but is not a message: it is damage too.
func TestUndecodableRecordIsSkipped(t *testing.T) {
	r := newDamageRig(t, corruption.PolicySkip, 0)
	a := r.put(t, "T", 0, "")
	bad := make([]byte, 60)
	copy(bad, []byte{0, 0, 0, 60, 0xDA, 0xA3, 0x20, 0xA7}) // TOTALSIZE 60, magic V1, nothing else
	if _, err := r.st.CommitLog.Append([][]byte{bad}); err != nil {
		t.Fatal(err)
	}
	b := r.put(t, "T", 0, "")
	r.start(t, time.Hour)
	r.caughtUp(t)
	if got := units(t, r.st, "T", 0); fmt.Sprint(got) != fmt.Sprint([]consumequeue.Unit{a, b}) {
		t.Fatalf("units %v, want %v", got, []consumequeue.Unit{a, b})
	}
	if got := r.st.Corruption().Counted(corruption.FileCommitLog); got != 64 {
		t.Fatalf("counted %d bytes, want 64", got)
	}
}

// queueFile is the path of queue topic/q's unit file starting at base.
func queueFile(st *storage.Store, topic string, q int32, base int64) string {
	return filepath.Join(st.Dir, "consumequeue", topic, fmt.Sprint(q), fmt.Sprintf("%020d", base))
}

// TestDamagedConsumeQueueIsRebuilt damages units of a consume queue on
// disk; a reader reports the first damaged unit it meets and the dispatcher
// rebuilds the queue from the CommitLog.
func TestDamagedConsumeQueueIsRebuilt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		damaged  []int64 // unit indexes whose bytes are flipped
		reported int64
	}{
		{"one unit's offset", []int64{3}, 3},
		{"three units, reported at the last", []int64{9, 10, 11}, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newDamageRig(t, corruption.PolicySkip, 0)
			var want []consumequeue.Unit
			for i := 0; i < 20; i++ {
				want = append(want, r.put(t, "T", 0, "x"))
				r.put(t, "U", 0, "")
			}
			r.start(t, time.Hour)
			r.caughtUp(t)
			for _, i := range tc.damaged {
				// Byte 5 of a unit is inside its commit-log offset.
				flip(t, queueFile(r.st, "T", 0, i/8*8), (i%8)*consumequeue.UnitSize+5)
			}
			q := r.st.Queues.Lookup("T", 0)
			us, err := q.Read(0, 20)
			if err != nil {
				t.Fatal(err)
			}
			_, states := storage.ReadUnitsChecked(r.st.CommitLog, us)
			for i, s := range states {
				damaged := false
				for _, d := range tc.damaged {
					damaged = damaged || int64(i) == d
				}
				if (s == storage.UnitDamaged) != damaged {
					t.Fatalf("unit %d state %s", i, s)
				}
			}
			r.st.ReportDamagedUnit(q.ID(), tc.reported)
			deadline := time.Now().Add(wait)
			for {
				// A read racing with the rebuild may fail or see fewer units.
				got, err := q.Read(0, 1<<16)
				if err == nil && fmt.Sprint(got) == fmt.Sprint(want) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("queue not rebuilt: %v (%v)\nwant %v", got, err, want)
				}
				time.Sleep(time.Millisecond)
			}
			wantBytes := int64(len(tc.damaged)) * consumequeue.UnitSize
			for r.st.Corruption().Counted(corruption.FileConsumeQueue) != wantBytes {
				if time.Now().After(deadline) {
					t.Fatalf("counted %d bytes, want %d", r.st.Corruption().Counted(corruption.FileConsumeQueue), wantBytes)
				}
				time.Sleep(time.Millisecond)
			}
			if got := units(t, r.st, "U", 0); len(got) != 20 {
				t.Fatalf("U/0 has %d units after the rebuild of T/0", len(got))
			}
		})
	}
}

// TestCutQueueTailIsDispatchedAgain damages a consume queue below the
// dispatch checkpoint so that recovery cuts its tail on open: dispatching
// resumes early enough to add the cut units again.
func TestCutQueueTailIsDispatchedAgain(t *testing.T) {
	r := newDamageRig(t, corruption.PolicySkip, 0)
	var want []consumequeue.Unit
	for i := 0; i < 12; i++ {
		want = append(want, r.put(t, "T", 0, ""))
	}
	r.start(t, time.Hour)
	r.caughtUp(t)
	r.stop() // writes the checkpoint past every record
	if cp := checkpoint(t, r.st); cp != r.st.CommitLog.MaxOffset() {
		t.Fatalf("checkpoint %d, want %d", cp, r.st.CommitLog.MaxOffset())
	}
	// Unit 9 (in the last file, units 8..11) goes backwards: recovery cuts
	// units 9..11.
	flip(t, queueFile(r.st, "T", 0, 8), 1*consumequeue.UnitSize+1)
	r.reopen(t)
	if got := r.st.Queues.Lookup("T", 0).MaxOffset(); got != 9 {
		t.Fatalf("recovery kept %d units, want 9", got)
	}
	if got, want := r.st.Dispatched.Load(), want[8].Offset+int64(want[8].Size)+commitlog.EntryOverhead; got != want {
		t.Fatalf("dispatch resumes at %d, want %d (after the last unit kept)", got, want)
	}
	r.start(t, time.Hour)
	r.caughtUp(t)
	if got := units(t, r.st, "T", 0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("units %v, want %v", got, want)
	}
}
