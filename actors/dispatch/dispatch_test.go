package dispatch

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

const wait = 5 * time.Second

// rig is an actor system and a real store for one dispatcher at a time.
type rig struct {
	st       *storage.Store
	sys      *actor.ActorSystem
	metrics  *stage.Registry
	strat    *supervisor.Strategy
	d        *stage.Stage
	kicker   *Kicker
	restarts atomic.Int32
	retry    time.Duration // Options.RetryInterval

	mu       sync.Mutex
	arrivals []Arrival
	// next queue offset per queue, as the writer would assign.
	next map[consumequeue.QueueID]int64
}

func newRig(t *testing.T) *rig {
	return newRigSegment(t, 0)
}

// newRigSegment opens the store with the given CommitLog segment size (0:
// the default).
func newRigSegment(t *testing.T, segment int64) *rig {
	return newRigFS(t, segment, nil)
}

// newRigFS opens the store on fs (nil: the real file system). Its
// supervisor counts restarts and retires a stage stopped for good, as the
// broker's does.
func newRigFS(t *testing.T, segment int64, fs vfs.FS) *rig {
	t.Helper()
	st, err := storage.Open(t.TempDir(), storage.Options{SegmentSize: segment, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{st: st, sys: stage.NewSystem(zerolog.Nop()), next: map[consumequeue.QueueID]int64{}}
	r.metrics = stage.NewRegistry(prometheus.NewRegistry())
	r.strat = supervisor.New(supervisor.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond,
		OnRestart: func(string) { r.restarts.Add(1) }, Retire: r.metrics.Retire})
	t.Cleanup(func() {
		if r.d != nil {
			r.d.Stop()
		}
		r.sys.Shutdown()
		_ = st.Close()
	})
	return r
}

func (r *rig) start(t *testing.T, interval time.Duration) {
	t.Helper()
	r.kicker = &Kicker{}
	s, err := r.metrics.Spawn(r.sys, r.strat, StageName, Producer(Options{
		Store: r.st, CheckpointInterval: interval, RetryInterval: r.retry, Notify: r.notify,
	}, r.kicker))
	if err != nil {
		t.Fatal(err)
	}
	r.kicker.Bind(s)
	r.kicker.Kick() // as the broker does: Started may run before Bind
	r.d = s
}

func (r *rig) stop() {
	r.d.Stop()
	r.d = nil
}

func (r *rig) notify(a []Arrival) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.arrivals = append(r.arrivals, a...)
}

// takeArrivals returns and clears the arrivals seen so far.
func (r *rig) takeArrivals() []Arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.arrivals
	r.arrivals = nil
	return a
}

// put appends one record to the CommitLog with the next queue offset of
// its queue, as the writer does, and returns its offset and size.
func (r *rig) put(t *testing.T, topic string, queue int32, tags string) consumequeue.Unit {
	t.Helper()
	id := consumequeue.QueueID{Topic: topic, QueueID: queue}
	props := map[string]string{}
	if tags != "" {
		props[message.PropTags] = tags
	}
	rec := &message.Record{QueueID: queue, Topic: topic, QueueOffset: r.next[id], Body: []byte("body"),
		Properties: message.EncodeProperties(props)}
	b, err := rec.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := r.st.CommitLog.Append([][]byte{b})
	if err != nil {
		t.Fatal(err)
	}
	// Durable at once, as the writer makes it eventually: a checkpoint
	// never passes the CommitLog's durable end.
	if err := r.st.CommitLog.Sync(); err != nil {
		t.Fatal(err)
	}
	r.next[id]++
	return consumequeue.Unit{Offset: offs[0], Size: int32(len(b)), TagsCode: message.TagsHashCode(tags)}
}

// caughtUp waits until everything in the CommitLog is dispatched.
func (r *rig) caughtUp(t *testing.T) {
	t.Helper()
	// After injected faults the supervisor's restart backoff may have
	// grown (each restart's reopen met the fault again until it was
	// cleared): on CI's two loaded cores under -race that took longer
	// than one wait (TestFailedQueueIsReopened/failed_rollback).
	deadline := time.Now().Add(4 * wait)
	for r.st.Dispatched.Load() != r.st.CommitLog.MaxOffset() {
		if time.Now().After(deadline) {
			t.Fatalf("Dispatched %d never reached %d", r.st.Dispatched.Load(), r.st.CommitLog.MaxOffset())
		}
		time.Sleep(time.Millisecond)
	}
}

func units(t *testing.T, st *storage.Store, topic string, queue int32) []consumequeue.Unit {
	t.Helper()
	q := st.Queues.Lookup(topic, queue)
	if q == nil {
		return nil
	}
	u, err := q.Read(0, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// checkpoint returns the persisted dispatch offset, or -1 when there is
// none (LoadCheckpoint reads a missing file as empty).
func checkpoint(t *testing.T, st *storage.Store) int64 {
	t.Helper()
	cp, err := meta.LoadCheckpoint(nil, st.CheckpointPath())
	if err != nil {
		t.Fatal(err)
	}
	v, ok := cp.Get(CheckpointKey)
	if !ok {
		if _, err := os.Stat(st.CheckpointPath()); !errors.Is(err, os.ErrNotExist) {
			// Written between the two looks? Then it has the entry now.
			if again, err := meta.LoadCheckpoint(nil, st.CheckpointPath()); err == nil {
				if v, ok := again.Get(CheckpointKey); ok {
					return v
				}
			}
			t.Fatalf("checkpoint file exists without a %q entry: %+v", CheckpointKey, cp)
		}
		return -1
	}
	return v
}

func TestUnitsAndArrivals(t *testing.T) {
	r := newRig(t)
	want := map[consumequeue.QueueID][]consumequeue.Unit{}
	for _, m := range []struct {
		topic string
		queue int32
		tags  string
	}{{"T", 0, "TagA"}, {"T", 0, ""}, {"T", 1, "a"}, {"U", 0, "TagB"}, {"T", 0, "TagA"}} {
		id := consumequeue.QueueID{Topic: m.topic, QueueID: m.queue}
		want[id] = append(want[id], r.put(t, m.topic, m.queue, m.tags))
	}
	r.start(t, time.Hour)
	r.caughtUp(t)
	for id, w := range want {
		got := units(t, r.st, id.Topic, id.QueueID)
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("units of %v = %v, want %v", id, got, w)
		}
	}
	// Java's "a".hashCode() is 97; no tags hash to 0.
	if u := units(t, r.st, "T", 1); len(u) != 1 || u[0].TagsCode != 97 {
		t.Errorf("T/1 units %v, want tag code 97", u)
	}
	if u := units(t, r.st, "T", 0); len(u) != 3 || u[1].TagsCode != 0 {
		t.Errorf("T/0 units %v, want tag code 0 for the untagged message", u)
	}
	got := latest(r.takeArrivals())
	wantA := map[consumequeue.QueueID]int64{{Topic: "T", QueueID: 0}: 3, {Topic: "T", QueueID: 1}: 1,
		{Topic: "U", QueueID: 0}: 1}
	if fmt.Sprint(got) != fmt.Sprint(wantA) {
		t.Errorf("arrivals = %v, want %v", got, wantA)
	}

	// A later record is dispatched on the next kick, and announced alone.
	u := r.put(t, "U", 0, "TagC")
	r.kicker.Kick()
	r.caughtUp(t)
	if got := units(t, r.st, "U", 0); len(got) != 2 || got[1] != u {
		t.Errorf("U/0 units after kick = %v, want second %v", got, u)
	}
	if a := r.takeArrivals(); len(a) != 1 || a[0] != (Arrival{Topic: "U", QueueID: 0, MaxOffset: 2}) {
		t.Errorf("arrivals after kick = %v, want [U/0 -> 2]", a)
	}
}

// latest keeps each queue's highest announced end.
func latest(as []Arrival) map[consumequeue.QueueID]int64 {
	m := map[consumequeue.QueueID]int64{}
	for _, a := range as {
		id := consumequeue.QueueID{Topic: a.Topic, QueueID: a.QueueID}
		if a.MaxOffset > m[id] {
			m[id] = a.MaxOffset
		}
	}
	return m
}

func TestManyRecordsSpanBatches(t *testing.T) {
	r := newRig(t)
	n := batchLimit + batchLimit/2
	for i := 0; i < n; i++ {
		r.put(t, "T", int32(i%2), "")
	}
	r.start(t, time.Hour)
	r.caughtUp(t)
	for q := int32(0); q < 2; q++ {
		if got := r.st.Queues.Lookup("T", q).MaxOffset(); got != int64(n/2) {
			t.Errorf("T/%d has %d units, want %d", q, got, n/2)
		}
	}
}

func TestRestartFromOlderOffsetIsIdempotent(t *testing.T) {
	r := newRig(t)
	for i := 0; i < 6; i++ {
		r.put(t, "T", int32(i%3), fmt.Sprintf("tag%d", i))
	}
	r.start(t, time.Hour)
	r.caughtUp(t)
	before := map[int32][]consumequeue.Unit{}
	for q := int32(0); q < 3; q++ {
		before[q] = units(t, r.st, "T", q)
	}
	r.stop()
	r.takeArrivals()

	for _, from := range []int64{0, before[1][0].Offset} {
		r.st.Dispatched.Store(from)
		r.start(t, time.Hour)
		r.caughtUp(t)
		r.stop()
		for q := int32(0); q < 3; q++ {
			if got := units(t, r.st, "T", q); fmt.Sprint(got) != fmt.Sprint(before[q]) {
				t.Errorf("restart from %d: T/%d units = %v, want %v", from, q, got, before[q])
			}
		}
		if a := r.takeArrivals(); len(a) != 0 {
			t.Errorf("restart from %d announced %v, want nothing (no unit added)", from, a)
		}
	}

	// New records after the replay are appended exactly once.
	r.st.Dispatched.Store(0)
	u := r.put(t, "T", 2, "new")
	r.start(t, time.Hour)
	r.caughtUp(t)
	got := units(t, r.st, "T", 2)
	if len(got) != len(before[2])+1 || got[len(got)-1] != u {
		t.Errorf("T/2 units = %v, want %v plus %v", got, before[2], u)
	}
}

func TestCheckpointWrittenAfterInterval(t *testing.T) {
	r := newRig(t)
	for i := 0; i < 3; i++ {
		r.put(t, "T", 0, "")
	}
	const interval = 300 * time.Millisecond
	begin := time.Now()
	r.start(t, interval)
	r.caughtUp(t)
	if time.Since(begin) < interval/2 {
		if cp := checkpoint(t, r.st); cp != -1 {
			t.Errorf("checkpoint %d written before CheckpointInterval", cp)
		}
	}
	deadline := time.Now().Add(wait)
	for {
		cp := checkpoint(t, r.st)
		if d := r.st.Dispatched.Load(); cp > d {
			t.Fatalf("checkpoint %d is ahead of Dispatched %d", cp, d)
		}
		if cp == r.st.CommitLog.MaxOffset() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint %d never reached %d", cp, r.st.CommitLog.MaxOffset())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if el := time.Since(begin); el < interval {
		t.Errorf("checkpoint written after %s, before the %s interval", el, interval)
	}

	// Stopping persists exactly what was dispatched, never more.
	r.put(t, "T", 0, "")
	r.put(t, "T", 1, "")
	r.kicker.Kick()
	r.stop()
	if cp, d := checkpoint(t, r.st), r.st.Dispatched.Load(); cp != d {
		t.Errorf("checkpoint after stop = %d, Dispatched = %d; want equal", cp, d)
	}
}

func TestStartOffset(t *testing.T) {
	r := newRig(t)
	log := zerolog.Nop()
	if got := StartOffset(r.st, log); got != 0 {
		t.Errorf("fresh store: StartOffset = %d, want 0", got)
	}
	u := r.put(t, "T", 0, "")
	if err := meta.UpdateCheckpoint(nil, r.st.CheckpointPath(), CheckpointKey, u.Offset+int64(u.Size)); err != nil {
		t.Fatal(err)
	}
	if got := StartOffset(r.st, log); got != 0 {
		t.Errorf("checkpoint but no consume queues: StartOffset = %d, want 0 (rebuild)", got)
	}
	if _, err := r.st.Queues.Queue("T", 0); err != nil {
		t.Fatal(err)
	}
	if got, want := StartOffset(r.st, log), u.Offset+int64(u.Size); got != want {
		t.Errorf("StartOffset = %d, want checkpoint %d", got, want)
	}
}

func TestKickBeforeBindIsNoop(t *testing.T) {
	var k Kicker
	k.Kick() // must not panic
	if k.pending.Load() {
		t.Error("unbound Kick left a pending flag")
	}
}

// TestUnitsAcrossSegmentEnds fills several small CommitLog segments, so
// that records follow end-of-segment fillers: every unit must point at its
// record's real offset, and each one must read back.
func TestUnitsAcrossSegmentEnds(t *testing.T) {
	r := newRigSegment(t, 4096)
	var want []consumequeue.Unit
	for i := 0; i < 200; i++ {
		want = append(want, r.put(t, "seg", 0, ""))
	}
	r.start(t, time.Hour)
	r.caughtUp(t)
	got := units(t, r.st, "seg", 0)
	if len(got) != len(want) {
		t.Fatalf("%d units, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("unit %d = %+v, want %+v", i, got[i], want[i])
		}
		if _, err := r.st.CommitLog.ReadAt(got[i].Offset, got[i].Size); err != nil {
			t.Fatalf("unit %d does not read back: %v", i, err)
		}
	}
}
