package index

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/storage"
	keyindex "github.com/wheelmq/wheelmq/storage/index"
	"github.com/wheelmq/wheelmq/storage/message"
)

const wait = 5 * time.Second

// rig is a real store and an actor system for one index stage at a time.
type rig struct {
	dir     string
	st      *storage.Store
	sys     *actor.ActorSystem
	metrics *stage.Registry
	strat   *supervisor.Strategy
	s       *stage.Stage
	kicker  *Kicker
	limit   func() int64
	next    map[string]int64 // next queue offset per topic (queue 0)
}

func newRig(t testing.TB) *rig {
	t.Helper()
	r := &rig{dir: t.TempDir(), sys: stage.NewSystem(zerolog.Nop()), next: map[string]int64{}}
	r.metrics = stage.NewRegistry(prometheus.NewRegistry())
	r.strat = supervisor.New(supervisor.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond})
	r.open(t)
	t.Cleanup(func() {
		if r.s != nil {
			r.s.Stop()
		}
		r.sys.Shutdown()
		_ = r.st.Close()
	})
	return r
}

func (r *rig) open(t testing.TB) {
	t.Helper()
	st, err := storage.Open(r.dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
}

// start spawns the stage; by default it may index everything in the
// CommitLog (as if the dispatcher were caught up).
func (r *rig) start(t testing.TB) {
	t.Helper()
	limit := r.limit
	if limit == nil {
		limit = r.st.CommitLog.MaxOffset
	}
	r.kicker = &Kicker{}
	s, err := r.metrics.Spawn(r.sys, r.strat, StageName, Producer(Options{
		Store: r.st, Limit: limit, CheckpointInterval: time.Hour,
		Index: keyindex.Options{Slots: 16, MaxEntries: 64},
	}, r.kicker))
	if err != nil {
		t.Fatal(err)
	}
	r.kicker.Kick() // as the pipeline does
	r.s = s
}

func (r *rig) stop() {
	r.s.Stop()
	r.s = nil
}

type msg struct {
	topic string
	uniq  string
	keys  string
	ts    int64
	flag  int32
}

// put appends one record to the CommitLog and returns its offset.
func (r *rig) put(t testing.TB, m msg) int64 {
	t.Helper()
	props := map[string]string{}
	if m.uniq != "" {
		props[message.PropUniqKey] = m.uniq
	}
	if m.keys != "" {
		props[message.PropKeys] = m.keys
	}
	rec := &message.Record{Topic: m.topic, QueueOffset: r.next[m.topic], SysFlag: m.flag, StoreTimestamp: m.ts,
		Body: []byte("body"), Properties: message.EncodeProperties(props)}
	b, err := rec.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := r.st.CommitLog.Append([][]byte{b})
	if err != nil {
		t.Fatal(err)
	}
	r.next[m.topic]++
	return offs[0]
}

// caughtUp waits until everything below the CommitLog's end is indexed.
func (r *rig) caughtUp(t testing.TB, upTo int64) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for r.kicker.Indexed() != upTo {
		if time.Now().After(deadline) {
			t.Fatalf("Indexed %d never reached %d", r.kicker.Indexed(), upTo)
		}
		time.Sleep(time.Millisecond)
	}
}

func (r *rig) query(t testing.TB, q Query) QueryResult {
	t.Helper()
	ch := make(chan QueryResult, 1)
	q.Reply = func(res QueryResult) { ch <- res }
	r.s.Send(&q)
	select {
	case res := <-ch:
		return res
	case <-time.After(wait):
		t.Fatal("query not answered")
		return QueryResult{}
	}
}

// found returns the offsets of the records a query returned.
func found(t testing.TB, res QueryResult) []int64 {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("query error: %v", res.Err)
	}
	var out []int64
	for _, rec := range res.Records {
		out = append(out, message.PeekPhysicalOffset(rec))
	}
	return out
}

func (r *rig) view(t testing.TB, off int64) ([]byte, error) {
	t.Helper()
	type answer struct {
		rec []byte
		err error
	}
	ch := make(chan answer, 1)
	r.s.Send(&View{Offset: off, Reply: func(rec []byte, err error) { ch <- answer{rec, err} }})
	select {
	case a := <-ch:
		return a.rec, a.err
	case <-time.After(wait):
		t.Fatal("view not answered")
		return nil, nil
	}
}

// entries opens the stage's index directory (the stage must be stopped)
// and returns how many entries it holds.
func (r *rig) entries(t testing.TB) int64 {
	t.Helper()
	ix, err := keyindex.Open(filepath.Join(r.dir, "index"), keyindex.Options{Slots: 16, MaxEntries: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	return ix.Stats().Entries
}

func eq(a, b []int64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

const all = 1 << 62

func TestQueryAndView(t *testing.T) {
	r := newRig(t)
	o := []int64{
		r.put(t, msg{topic: "T", uniq: "U0", keys: "order-1 order-2", ts: 1000}),
		r.put(t, msg{topic: "T", uniq: "U1", keys: "order-1", ts: 2000}),
		r.put(t, msg{topic: "X", keys: "order-1", ts: 3000}),
		r.put(t, msg{topic: "T", keys: "order-1", ts: 4000, flag: message.SysFlagTransactionRollback}),
		r.put(t, msg{topic: "T", ts: 5000}),
		r.put(t, msg{topic: "T", keys: "  order-3  order-1", ts: 6000}),
		r.put(t, msg{topic: "T", uniq: "U6", keys: "order-1", ts: 7000, flag: message.SysFlagTransactionPrepared}),
	}
	r.start(t)
	r.caughtUp(t, r.st.CommitLog.MaxOffset())
	tests := []struct {
		name string
		q    Query
		want []int64
	}{
		{"by key", Query{Topic: "T", Key: "order-1", MaxNum: 64, End: all}, []int64{o[0], o[1], o[5], o[6]}},
		{"other topic", Query{Topic: "X", Key: "order-1", MaxNum: 64, End: all}, []int64{o[2]}},
		{"by uniq key", Query{Topic: "T", Key: "U1", Unique: true, End: all}, []int64{o[1]}},
		{"second key", Query{Topic: "T", Key: "order-2", MaxNum: 64, End: all}, []int64{o[0]}},
		{"spaces around keys", Query{Topic: "T", Key: "order-3", MaxNum: 64, End: all}, []int64{o[5]}},
		{"time range", Query{Topic: "T", Key: "order-1", MaxNum: 64, Begin: 1500, End: 6000}, []int64{o[1], o[5]}},
		{"cap keeps the newest", Query{Topic: "T", Key: "order-1", MaxNum: 2, End: all}, []int64{o[5], o[6]}},
		{"cap 0", Query{Topic: "T", Key: "order-1", MaxNum: 0, End: all}, nil},
		{"end before begin", Query{Topic: "T", Key: "order-1", MaxNum: 64, Begin: 10, End: 5}, nil},
		{"unknown key", Query{Topic: "T", Key: "nope", MaxNum: 64, End: all}, nil},
		{"key of another topic", Query{Topic: "X", Key: "U0", Unique: true, End: all}, nil},
		{"empty key", Query{Topic: "T", Key: "", MaxNum: 64, End: all}, nil},
	}
	for _, tt := range tests {
		res := r.query(t, tt.q)
		if got := found(t, res); !eq(got, tt.want) {
			t.Errorf("%s: found %v, want %v", tt.name, got, tt.want)
		}
		if res.LastOffset != o[6] || res.LastTimestamp != 7000 {
			t.Errorf("%s: last %d@%d, want %d@7000", tt.name, res.LastOffset, res.LastTimestamp, o[6])
		}
	}
	rec, err := r.view(t, o[2])
	if err != nil || message.PeekPhysicalOffset(rec) != o[2] || message.PeekStoreTimestamp(rec) != 3000 {
		t.Errorf("View(%d) = %d bytes, %v", o[2], len(rec), err)
	}
	for _, off := range []int64{o[2] + 1, -1, r.st.CommitLog.MaxOffset(), 1 << 40} {
		if _, err := r.view(t, off); err == nil {
			t.Errorf("View(%d) found a record", off)
		}
	}
}

func TestRunsBehindTheLimit(t *testing.T) {
	r := newRig(t)
	var limit atomic.Int64
	r.limit = limit.Load
	o0 := r.put(t, msg{topic: "T", keys: "a", ts: 1})
	o1 := r.put(t, msg{topic: "T", keys: "a", ts: 2})
	limit.Store(o1) // only the first record is dispatched
	r.start(t)
	r.caughtUp(t, o1)
	if got := found(t, r.query(t, Query{Topic: "T", Key: "a", MaxNum: 64, End: all})); !eq(got, []int64{o0}) {
		t.Errorf("behind the limit: %v, want only %d", got, o0)
	}
	limit.Store(r.st.CommitLog.MaxOffset())
	r.kicker.Kick()
	r.caughtUp(t, r.st.CommitLog.MaxOffset())
	if got := found(t, r.query(t, Query{Topic: "T", Key: "a", MaxNum: 64, End: all})); !eq(got, []int64{o0, o1}) {
		t.Errorf("after the limit moved: %v", got)
	}
}

func TestManyRecordsSpanBatchesAndFiles(t *testing.T) {
	r := newRig(t)
	n := batchLimit + 100
	for i := 0; i < n; i++ {
		r.put(t, msg{topic: "T", uniq: fmt.Sprintf("U%d", i), keys: "all", ts: int64(i)})
	}
	r.start(t)
	r.caughtUp(t, r.st.CommitLog.MaxOffset())
	res := r.query(t, Query{Topic: "T", Key: "all", MaxNum: 1000, End: all})
	if got := len(found(t, res)); got != MaxQueryResults {
		t.Errorf("%d records for a frequent key, want the cap %d", got, MaxQueryResults)
	}
	if got := found(t, r.query(t, Query{Topic: "T", Key: "U7", Unique: true, End: all})); len(got) != 1 {
		t.Errorf("U7: %v", got)
	}
	r.stop()
	if e := r.entries(t); e != int64(2*n) {
		t.Errorf("%d entries, want %d", e, 2*n)
	}
}

func TestRestartResumesWithoutDuplicates(t *testing.T) {
	r := newRig(t)
	for i := 0; i < 10; i++ {
		r.put(t, msg{topic: "T", uniq: fmt.Sprintf("U%d", i), keys: "k", ts: int64(i)})
	}
	r.start(t)
	r.caughtUp(t, r.st.CommitLog.MaxOffset())
	r.stop() // closing syncs the position
	for i := 10; i < 15; i++ {
		r.put(t, msg{topic: "T", uniq: fmt.Sprintf("U%d", i), keys: "k", ts: int64(i)})
	}
	r.start(t)
	r.caughtUp(t, r.st.CommitLog.MaxOffset())
	if got := found(t, r.query(t, Query{Topic: "T", Key: "k", MaxNum: 64, End: all})); len(got) != 15 {
		t.Errorf("%d records after the restart, want 15", len(got))
	}
	r.stop()
	if e := r.entries(t); e != 30 {
		t.Errorf("%d entries, want 30 (each record once)", e)
	}
}

// TestSupervisorRestartResumes makes the stage fail in the middle of its
// work: the supervisor restarts it, it reopens the index and finishes,
// adding each record once.
func TestSupervisorRestartResumes(t *testing.T) {
	r := newRig(t)
	for i := 0; i < 20; i++ {
		r.put(t, msg{topic: "T", keys: "k", ts: int64(i)})
	}
	var calls atomic.Int32
	r.limit = func() int64 {
		if calls.Add(1) == 2 {
			panic("injected failure")
		}
		return r.st.CommitLog.MaxOffset()
	}
	r.start(t)
	r.caughtUp(t, r.st.CommitLog.MaxOffset())
	for i := 20; i < 25; i++ {
		r.put(t, msg{topic: "T", keys: "k", ts: int64(i)})
	}
	r.kicker.Kick()
	r.caughtUp(t, r.st.CommitLog.MaxOffset())
	if calls.Load() < 3 {
		t.Fatalf("the injected failure did not happen (%d calls)", calls.Load())
	}
	if got := found(t, r.query(t, Query{Topic: "T", Key: "k", MaxNum: 64, End: all})); len(got) != 25 {
		t.Errorf("%d records, want 25", len(got))
	}
	r.stop()
	if e := r.entries(t); e != 25 {
		t.Errorf("%d entries, want 25", e)
	}
}

// TestCommitLogLostItsTail indexes records, loses the last ones from the
// CommitLog (a torn tail cut by recovery), and checks that the index drops
// their keys and indexes what is written at those offsets afterwards.
func TestCommitLogLostItsTail(t *testing.T) {
	r := newRig(t)
	r.put(t, msg{topic: "T", keys: "kept", ts: 1})
	lost := r.put(t, msg{topic: "T", keys: "lost", ts: 2})
	r.start(t)
	r.caughtUp(t, r.st.CommitLog.MaxOffset())
	r.stop()
	if err := r.st.Close(); err != nil {
		t.Fatal(err)
	}
	// Tear the last record: recovery cuts the CommitLog at its start.
	seg := filepath.Join(r.dir, "commitlog", fmt.Sprintf("%020d", 0))
	if err := os.Truncate(seg, lost+10); err != nil {
		t.Fatal(err)
	}
	r.open(t)
	if got := r.st.CommitLog.Recovery().TruncatedAt; got != lost {
		t.Fatalf("recovery cut at %d, want %d", got, lost)
	}
	again := r.put(t, msg{topic: "T", keys: "new", ts: 3})
	if again != lost {
		t.Fatalf("new record at %d, want the lost offset %d", again, lost)
	}
	// More records before the stage starts: the CommitLog is longer again
	// than the index's position, which must not hide the cut.
	r.put(t, msg{topic: "T", keys: "pad", ts: 4})
	r.put(t, msg{topic: "T", keys: "pad", ts: 5})
	r.start(t)
	r.caughtUp(t, r.st.CommitLog.MaxOffset())
	if got := found(t, r.query(t, Query{Topic: "T", Key: "lost", MaxNum: 64, End: all})); len(got) != 0 {
		t.Errorf("the lost record's key still finds %v", got)
	}
	if got := found(t, r.query(t, Query{Topic: "T", Key: "new", MaxNum: 64, End: all})); !eq(got, []int64{lost}) {
		t.Errorf("new: %v, want [%d]", got, lost)
	}
	if got := found(t, r.query(t, Query{Topic: "T", Key: "kept", MaxNum: 64, End: all})); len(got) != 1 {
		t.Errorf("kept: %v", got)
	}
}

func TestKickBeforeBindIsNoop(t *testing.T) {
	var k Kicker
	k.Kick() // must not panic
	if k.pending.Load() {
		t.Error("unbound Kick left a pending flag")
	}
}

// BenchmarkIndexStage measures how many records per second the stage
// indexes from the CommitLog (each with a UNIQ_KEY and one KEYS value),
// default index layout, reads included.
func BenchmarkIndexStage(b *testing.B) {
	r := newRig(b)
	const n = 200_000
	for i := 0; i < n; i++ {
		r.put(b, msg{topic: "orders", uniq: fmt.Sprintf("7F0000010A2B18B4AAC25E3B%08X", i), keys: fmt.Sprintf("order-%d", i), ts: int64(i)})
	}
	b.ResetTimer()
	for b.Loop() {
		_ = os.RemoveAll(filepath.Join(r.dir, "index"))
		r.kicker = &Kicker{}
		s, err := r.metrics.Spawn(r.sys, r.strat, StageName, Producer(Options{
			Store: r.st, Limit: r.st.CommitLog.MaxOffset, CheckpointInterval: time.Hour,
		}, r.kicker))
		if err != nil {
			b.Fatal(err)
		}
		r.kicker.Kick()
		r.s = s
		r.caughtUp(b, r.st.CommitLog.MaxOffset())
		r.stop()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}

func TestFailAnswersRequests(t *testing.T) {
	boom := fmt.Errorf("stage down")
	var got QueryResult
	(&Query{Reply: func(r QueryResult) { got = r }}).Fail(boom)
	if got.Err != boom || got.Records != nil {
		t.Errorf("Query.Fail answered %+v", got)
	}
	var verr error
	(&View{Reply: func(_ []byte, err error) { verr = err }}).Fail(boom)
	if verr != boom {
		t.Errorf("View.Fail answered %v", verr)
	}
}
