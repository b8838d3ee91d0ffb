package offsets

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/metarec"
)

const wait = 5 * time.Second

type rig struct {
	path    string
	sys     *actor.ActorSystem
	metrics *stage.Registry
	s       *stage.Stage
	self    atomic.Pointer[stage.Stage]
}

func newRig(t *testing.T, interval time.Duration) *rig {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &rig{path: filepath.Join(dir, "consumerOffset.json"), sys: stage.NewSystem(zerolog.Nop()),
		metrics: stage.NewRegistry(prometheus.NewRegistry())}
	r.start(t, interval)
	t.Cleanup(func() {
		if r.s != nil {
			r.s.Stop()
		}
		r.sys.Shutdown()
	})
	return r
}

func (r *rig) start(t *testing.T, interval time.Duration) {
	t.Helper()
	s, err := r.metrics.Spawn(r.sys, supervisor.New(supervisor.Policy{}), StageName,
		Producer(Options{Path: r.path, FlushInterval: interval}))
	if err != nil {
		t.Fatal(err)
	}
	r.self.Store(s)
	r.s = s
	r.query(t, "", "", 0) // the table is loaded once this is answered
}

func (r *rig) query(t *testing.T, group, topic string, queue int32) (int64, bool) {
	t.Helper()
	type res struct {
		off int64
		ok  bool
	}
	ch := make(chan res, 1)
	r.s.Send(&Query{Group: group, Topic: topic, QueueID: queue, Reply: func(o int64, ok bool) { ch <- res{o, ok} }})
	select {
	case x := <-ch:
		return x.off, x.ok
	case <-time.After(wait):
		t.Fatal("Query not answered")
		return 0, false
	}
}

func (r *rig) flush(t *testing.T) error {
	t.Helper()
	ch := make(chan error, 1)
	r.s.Send(&Flush{Done: func(err error) { ch <- err }})
	select {
	case err := <-ch:
		return err
	case <-time.After(wait):
		t.Fatal("Flush not answered")
		return nil
	}
}

func (r *rig) onDisk(t *testing.T) meta.OffsetTable {
	t.Helper()
	tab, err := meta.LoadOffsets(nil, r.path)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

type q struct {
	group, topic string
	queue        int32
	off          int64
	ok           bool
}

func (r *rig) expect(t *testing.T, step string, qs []q) {
	t.Helper()
	for _, x := range qs {
		off, ok := r.query(t, x.group, x.topic, x.queue)
		if off != x.off || ok != x.ok {
			t.Errorf("%s: Query(%s, %s, %d) = %d, %v; want %d, %v", step, x.group, x.topic, x.queue, off, ok, x.off, x.ok)
		}
	}
}

func TestCommitQueryFlushDrop(t *testing.T) {
	r := newRig(t, time.Hour)
	for _, c := range []Commit{
		{"G", "T", 0, 5}, {"G", "T", 1, 7}, {"G2", "T", 0, 3}, {"G", "U", 0, 1},
		{"G", "T", 0, 9},  // overwrite
		{"G", "T", 1, -1}, // negative: ignored
		{"G", "T", 2, 0},  // zero is a real offset
	} {
		r.s.Send(&c)
	}
	r.expect(t, "after commits", []q{
		{"G", "T", 0, 9, true}, {"G", "T", 1, 7, true}, {"G", "T", 2, 0, true}, {"G2", "T", 0, 3, true},
		{"G", "U", 0, 1, true}, {"G", "T", 3, 0, false}, {"G3", "T", 0, 0, false}, {"G", "V", 0, 0, false},
	})
	if _, err := os.Stat(r.path); !os.IsNotExist(err) {
		t.Errorf("offsets file written before a flush (FlushInterval 1h): %v", err)
	}
	if err := r.flush(t); err != nil {
		t.Fatal(err)
	}
	want := meta.OffsetTable{"T@G": {0: 9, 1: 7, 2: 0}, "T@G2": {0: 3}, "U@G": {0: 1}}
	if got := r.onDisk(t); !reflect.DeepEqual(got, want) {
		t.Errorf("file after Flush = %v, want %v", got, want)
	}

	r.s.Send(&DropTopic{Topic: "T"})
	r.expect(t, "after DropTopic", []q{{"G", "T", 0, 0, false}, {"G2", "T", 0, 0, false}, {"G", "U", 0, 1, true}})
	if err := r.flush(t); err != nil {
		t.Fatal(err)
	}
	if got, want := r.onDisk(t), (meta.OffsetTable{"U@G": {0: 1}}); !reflect.DeepEqual(got, want) {
		t.Errorf("file after DropTopic = %v, want %v", got, want)
	}
}

func TestPeriodicFlush(t *testing.T) {
	r := newRig(t, 50*time.Millisecond)
	r.s.Send(&Commit{Group: "G", Topic: "T", QueueID: 0, Offset: 42})
	want := meta.OffsetTable{"T@G": {0: 42}}
	deadline := time.Now().Add(wait)
	for {
		if _, err := os.Stat(r.path); err == nil && reflect.DeepEqual(r.onDisk(t), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("offsets never flushed by the tick")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPersistsAcrossRestart(t *testing.T) {
	r := newRig(t, time.Hour)
	r.s.Send(&Commit{Group: "G", Topic: "T", QueueID: 3, Offset: 11})
	r.s.Send(&Commit{Group: "H", Topic: "T", QueueID: 0, Offset: 4})
	r.expect(t, "before stop", []q{{"G", "T", 3, 11, true}}) // processed
	r.s.Stop()                                               // flushes on stop, no explicit Flush
	r.start(t, time.Hour)
	r.expect(t, "after restart", []q{{"G", "T", 3, 11, true}, {"H", "T", 0, 4, true}, {"G", "T", 0, 0, false}})

	// A clean table is not rewritten: Flush with no change leaves the file.
	st, err := os.Stat(r.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	if err := r.flush(t); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.path); !os.IsNotExist(err) {
		t.Errorf("Flush without changes rewrote the file (was %d bytes)", st.Size())
	}
}

func TestFailedFlushKeepsChanges(t *testing.T) {
	r := newRig(t, time.Hour)
	r.s.Send(&Commit{Group: "G", Topic: "T", QueueID: 0, Offset: 8})
	dir := filepath.Dir(r.path)
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.flush(t); err == nil {
		t.Fatal("Flush succeeded although the parent of the file is a regular file")
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir+".moved", dir); err != nil {
		t.Fatal(err)
	}
	// Still dirty: the next flush writes the commit.
	if err := r.flush(t); err != nil {
		t.Fatal(err)
	}
	if got, want := r.onDisk(t), (meta.OffsetTable{"T@G": {0: 8}}); !reflect.DeepEqual(got, want) {
		t.Errorf("file after recovery = %v, want %v", got, want)
	}
}

// TestJournal: changed offsets go to Journal at most JournalInterval after
// the change, at once when JournalBurst piled up, each with its latest
// value; Apply sets offsets without journaling them.
func TestJournal(t *testing.T) {
	sys := stage.NewSystem(zerolog.Nop())
	t.Cleanup(sys.Shutdown)
	got := make(chan []metarec.Offset, 16)
	st, err := stage.NewRegistry(prometheus.NewRegistry()).Spawn(sys, supervisor.New(supervisor.Policy{}), StageName,
		Producer(Options{Path: filepath.Join(t.TempDir(), "consumerOffset.json"), JournalInterval: 50 * time.Millisecond,
			JournalBurst: 3, Journal: func(o []metarec.Offset) { got <- o }}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	recv := func(what string) []metarec.Offset {
		t.Helper()
		select {
		case o := <-got:
			slices.SortFunc(o, func(a, b metarec.Offset) int { return int(a.QueueID - b.QueueID) })
			return o
		case <-time.After(5 * time.Second):
			t.Fatalf("no journal for %s", what)
			return nil
		}
	}
	st.Send(&Commit{Group: "g", Topic: "t", QueueID: 0, Offset: 1})
	st.Send(&Commit{Group: "g", Topic: "t", QueueID: 0, Offset: 5})
	start := time.Now()
	if o := recv("one change"); len(o) != 1 || o[0].Offset != 5 {
		t.Fatalf("journal %+v, want t/g/0 = 5", o)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("journaled after %v, before the interval", d)
	}
	st.Send(&Apply{Offsets: []metarec.Offset{{Topic: "t", Group: "g", QueueID: 9, Offset: 9}}})
	for q := range int32(3) {
		st.Send(&Commit{Group: "g", Topic: "t", QueueID: q, Offset: int64(10 + q)})
	}
	if o := recv("a burst"); len(o) != 3 || o[2].Offset != 12 {
		t.Fatalf("burst journal %+v", o)
	}
	select {
	case o := <-got:
		t.Fatalf("applied offsets journaled: %+v", o)
	case <-time.After(100 * time.Millisecond):
	}
}
