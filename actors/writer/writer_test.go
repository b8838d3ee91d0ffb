package writer

import (
	"errors"
	"fmt"
	"io"
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
	"github.com/wheelmq/wheelmq/storage/vfs"
)

const wait = 5 * time.Second

// rig is one actor system with a writer stage on a real store.
type rig struct {
	dir     string
	fs      vfs.FS // nil: the real file system
	st      *storage.Store
	prom    *prometheus.Registry
	sys     *actor.ActorSystem
	metrics *stage.Registry
	strat   *supervisor.Strategy
	w       *stage.Stage
	self    atomic.Pointer[stage.Stage]
}

func newRig(t *testing.T) *rig { return newRigFS(t, nil) }

// newRigFS is newRig with the store on fs. Its supervisor retires a stage
// stopped for good, as the broker's does.
func newRigFS(t *testing.T, fs vfs.FS) *rig {
	t.Helper()
	r := &rig{dir: t.TempDir(), fs: fs, sys: stage.NewSystem(zerolog.Nop())}
	r.prom = prometheus.NewRegistry()
	r.metrics = stage.NewRegistry(r.prom)
	r.strat = supervisor.New(supervisor.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond,
		OnRestart: r.metrics.Restarted, Retire: r.metrics.Retire})
	r.open(t)
	t.Cleanup(func() {
		if r.w != nil {
			r.w.Stop()
		}
		r.sys.Shutdown()
		if r.st != nil {
			_ = r.st.Close()
		}
	})
	return r
}

func (r *rig) open(t *testing.T) {
	t.Helper()
	st, err := storage.Open(r.dir, storage.Options{FS: r.fs})
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
}

// start spawns the writer; opts.Store is filled in.
func (r *rig) start(t *testing.T, opts Options) {
	t.Helper()
	opts.Store = r.st
	s, err := r.metrics.Spawn(r.sys, r.strat, StageName, Producer(opts))
	if err != nil {
		t.Fatal(err)
	}
	r.self.Store(s)
	r.w = s
}

// restarts reads the writer's wheelmq_actor_restarts_total.
func (r *rig) restarts(t *testing.T) float64 {
	t.Helper()
	mfs, err := r.prom.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "wheelmq_actor_restarts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" && l.GetValue() == StageName {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func (r *rig) stop() {
	r.w.Stop()
	r.w = nil
}

// record encodes one stored message of topic/queue.
func record(t testing.TB, topic string, queue int32, body string) []byte {
	t.Helper()
	rec := &message.Record{QueueID: queue, Topic: topic, Body: []byte(body), BornTimestamp: 1, StoreTimestamp: 2,
		Properties: message.EncodeProperties(map[string]string{message.PropTags: "T"})}
	b, err := rec.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func records(t testing.TB, k QueueKey, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = record(t, k.Topic, k.QueueID, fmt.Sprintf("%s-%d-%d", k.Topic, k.QueueID, i))
	}
	return out
}

// send appends recs and waits for the answer.
func (r *rig) send(t *testing.T, k QueueKey, recs [][]byte) Result {
	t.Helper()
	ch := make(chan Result, 1)
	r.w.Send(&Append{Key: k, Records: recs, Reply: func(res Result) { ch <- res }})
	select {
	case res := <-ch:
		return res
	case <-time.After(wait):
		t.Fatalf("append to %v not answered", k)
		return Result{}
	}
}

// storedQueueOffsets reads the QUEUEOFFSET field of every record in the
// CommitLog, per queue, in log order.
func storedQueueOffsets(t *testing.T, st *storage.Store) map[QueueKey][]int64 {
	t.Helper()
	out := map[QueueKey][]int64{}
	for off := st.CommitLog.MinOffset(); ; {
		rec, next, err := st.CommitLog.Read(off)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		d, _, err := message.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if d.PhysicalOffset != off {
			t.Errorf("record at %d has PHYSICALOFFSET %d", off, d.PhysicalOffset)
		}
		k := QueueKey{d.Topic, d.QueueID}
		out[k] = append(out[k], d.QueueOffset)
		off = next
	}
}

// dispatchUpTo appends consume-queue units for the first n records of the
// CommitLog (as the dispatch stage would) and records the position in
// Store.Dispatched.
func dispatchUpTo(t *testing.T, st *storage.Store, n int) {
	t.Helper()
	off := st.CommitLog.MinOffset()
	for i := 0; i < n; i++ {
		rec, next, err := st.CommitLog.Read(off)
		if err != nil {
			t.Fatal(err)
		}
		d, _, err := message.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		q, err := st.Queues.Queue(d.Topic, d.QueueID)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Append(consumequeue.Unit{Offset: off, Size: int32(len(rec))}); err != nil {
			t.Fatal(err)
		}
		off = next
	}
	st.Dispatched.Store(off)
}

func TestParseFlushMode(t *testing.T) {
	tests := []struct {
		in      string
		want    FlushMode
		wantErr bool
	}{
		{"async", FlushAsync, false},
		{"sync", FlushSync, false},
		{"", 0, true},
		{"SYNC", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseFlushMode(tt.in)
		if (err != nil) != tt.wantErr || (err == nil && got != tt.want) {
			t.Errorf("ParseFlushMode(%q) = %v, %v", tt.in, got, err)
		}
		if err == nil && got.String() != tt.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tt.in)
		}
	}
}

func TestConsecutiveQueueOffsets(t *testing.T) {
	r := newRig(t)
	var appended atomic.Int32
	r.start(t, Options{Appended: func() { appended.Add(1) }})
	a0, a1, b0 := QueueKey{"A", 0}, QueueKey{"A", 1}, QueueKey{"B", 0}
	steps := []struct {
		key  QueueKey
		n    int
		want int64
	}{
		{a0, 1, 0}, {a0, 3, 1}, {a1, 2, 0}, {b0, 1, 0}, {a0, 1, 4}, {a1, 1, 2}, {b0, 5, 1},
	}
	var lastEnd int64
	for i, s := range steps {
		recs := records(t, s.key, s.n)
		res := r.send(t, s.key, recs)
		if res.Err != nil {
			t.Fatalf("step %d: %v", i, res.Err)
		}
		if res.QueueOffset != s.want {
			t.Errorf("step %d (%v x%d): QueueOffset = %d, want %d", i, s.key, s.n, res.QueueOffset, s.want)
		}
		if len(res.Offsets) != s.n {
			t.Fatalf("step %d: %d offsets for %d records", i, len(res.Offsets), s.n)
		}
		for j, off := range res.Offsets {
			if off != lastEnd {
				t.Errorf("step %d record %d: CommitLog offset %d, want %d (back to back)", i, j, off, lastEnd)
			}
			lastEnd = off + int64(len(recs[j])) + 4 // entry = record + CRC32C
		}
	}
	// Appended runs after the answers (by design): wait for the last one.
	waitFor(t, "every Appended call", func() bool { return int(appended.Load()) >= len(steps) })
	if got := int(appended.Load()); got != len(steps) {
		t.Errorf("Appended called %d times, want %d", got, len(steps))
	}
	want := map[QueueKey][]int64{a0: {0, 1, 2, 3, 4}, a1: {0, 1, 2}, b0: {0, 1, 2, 3, 4, 5}}
	got := storedQueueOffsets(t, r.st)
	for k, w := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(w) {
			t.Errorf("stored queue offsets of %v = %v, want %v", k, got[k], w)
		}
	}
}

func TestFailedAppendIsAnsweredAndConsumesNoOffset(t *testing.T) {
	r := newRig(t)
	r.start(t, Options{})
	k := QueueKey{"A", 0}
	bad := record(t, "A", 0, "x")
	bad[4] ^= 0xff // break the magic: the CommitLog refuses the record
	res := r.send(t, k, [][]byte{record(t, "A", 0, "ok"), bad})
	if res.Err == nil {
		t.Fatal("append of a broken record succeeded")
	}
	if r.st.CommitLog.MaxOffset() != 0 {
		t.Errorf("CommitLog grew to %d after a refused batch", r.st.CommitLog.MaxOffset())
	}
	res = r.send(t, k, records(t, k, 1))
	if res.Err != nil || res.QueueOffset != 0 {
		t.Errorf("next append = %+v, want queue offset 0", res)
	}
}

func TestFlushSyncGroupCommit(t *testing.T) {
	r := newRig(t)
	var syncs atomic.Int32
	firstSync := make(chan struct{})
	release := make(chan struct{})
	r.start(t, Options{Mode: FlushSync, OnSync: func() {
		if syncs.Add(1) == 1 {
			close(firstSync)
			<-release // hold the writer (it fsyncs) so the other appends queue up
		}
	}})

	type answer struct {
		res     Result
		flushed int64 // FlushedOffset when the answer was given
		size    int
	}
	const n = 64
	answers := make(chan answer, n)
	sendOne := func(i int) {
		k := QueueKey{"G", int32(i % 4)}
		rec := record(t, k.Topic, k.QueueID, fmt.Sprintf("m%d", i))
		r.w.Send(&Append{Key: k, Records: [][]byte{rec}, Reply: func(res Result) {
			answers <- answer{res: res, flushed: r.st.CommitLog.FlushedOffset(), size: len(rec)}
		}})
	}
	sendOne(0)
	select {
	case <-firstSync:
	case <-time.After(wait):
		t.Fatal("first append never synced")
	}
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sendOne(i)
		}()
	}
	wg.Wait()
	// Every append is queued while the first fsync is held; then let it go.
	if d := r.w.Depth(); d < n-1 {
		t.Fatalf("depth %d with %d appends sent during the first fsync", d, n-1)
	}
	close(release)

	perQueue := map[int32][]int64{}
	for i := 0; i < n; i++ {
		var a answer
		select {
		case a = <-answers:
		case <-time.After(wait):
			t.Fatalf("only %d of %d appends answered", i, n)
		}
		if a.res.Err != nil {
			t.Fatalf("append failed: %v", a.res.Err)
		}
		end := a.res.Offsets[0] + int64(a.size)
		if a.flushed < end {
			t.Errorf("append ending at %d answered with FlushedOffset %d", end, a.flushed)
		}
		d, _, err := message.Decode(mustRead(t, r.st, a.res.Offsets[0], a.size))
		if err != nil {
			t.Fatal(err)
		}
		perQueue[d.QueueID] = append(perQueue[d.QueueID], a.res.QueueOffset)
	}
	// One fsync for the first append, one for all that queued behind it.
	if got := syncs.Load(); got != 2 {
		t.Errorf("%d fsyncs for %d appends, want 2 (group commit)", got, n)
	}
	for q, offs := range perQueue {
		seen := map[int64]bool{}
		for _, o := range offs {
			if o < 0 || o >= int64(len(offs)) || seen[o] {
				t.Errorf("queue %d: offsets %v are not a permutation of 0..%d", q, offs, len(offs)-1)
				break
			}
			seen[o] = true
		}
	}
}

func mustRead(t *testing.T, st *storage.Store, off int64, size int) []byte {
	t.Helper()
	b, err := st.CommitLog.ReadAt(off, int32(size))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFlushAsyncAnswersThenTicks(t *testing.T) {
	r := newRig(t)
	var syncs atomic.Int32
	r.start(t, Options{Mode: FlushAsync, FlushInterval: 50 * time.Millisecond, OnSync: func() { syncs.Add(1) }})
	k := QueueKey{"A", 0}
	flushedAtReply := make(chan int64, 1)
	r.w.Send(&Append{Key: k, Records: records(t, k, 3), Reply: func(res Result) {
		if res.Err != nil || res.QueueOffset != 0 {
			t.Errorf("append = %+v", res)
		}
		flushedAtReply <- r.st.CommitLog.FlushedOffset()
	}})
	select {
	case f := <-flushedAtReply:
		if f != 0 {
			t.Errorf("async append answered after an fsync (FlushedOffset %d), want before", f)
		}
	case <-time.After(wait):
		t.Fatal("append not answered")
	}
	deadline := time.Now().Add(wait)
	for r.st.CommitLog.FlushedOffset() != r.st.CommitLog.MaxOffset() || syncs.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("FlushedOffset %d never reached %d (%d periodic syncs)", r.st.CommitLog.FlushedOffset(),
				r.st.CommitLog.MaxOffset(), syncs.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRebuildAfterRestart(t *testing.T) {
	a0, a1, b0 := QueueKey{"A", 0}, QueueKey{"A", 1}, QueueKey{"B", 0}
	tests := []struct {
		name       string
		dispatched int  // records put in the consume queues before the restart
		reopen     bool // also close and reopen the store (process restart)
	}{
		{"nothing dispatched", 0, false},
		{"partly dispatched", 4, false},
		{"all dispatched", 6, false},
		{"nothing dispatched, store reopened", 0, true},
		{"partly dispatched, store reopened", 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			r.start(t, Options{})
			// Log order: A0 A0 A1 A0 B0 A1.
			for _, k := range []QueueKey{a0, a0, a1, a0, b0, a1} {
				if res := r.send(t, k, records(t, k, 1)); res.Err != nil {
					t.Fatal(res.Err)
				}
			}
			r.stop()
			dispatchUpTo(t, r.st, tt.dispatched)
			if tt.reopen {
				d := r.st.Dispatched.Load()
				if err := r.st.Close(); err != nil {
					t.Fatal(err)
				}
				r.open(t)
				r.st.Dispatched.Store(d)
			}
			r.start(t, Options{})
			for _, c := range []struct {
				key  QueueKey
				want int64
			}{{a0, 3}, {a1, 2}, {b0, 1}, {QueueKey{"C", 0}, 0}, {a0, 4}} {
				res := r.send(t, c.key, records(t, c.key, 1))
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				if res.QueueOffset != c.want {
					t.Errorf("after restart, %v got queue offset %d, want %d", c.key, res.QueueOffset, c.want)
				}
			}
		})
	}
}
