package metalog

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/metarec"
)

const wait = 10 * time.Second

var host = netip.MustParseAddrPort("10.0.0.9:10911")

// rig runs a real store with the writer (unless replica), dispatch, topics,
// groups, offsets and metalog stages.
type rig struct {
	t       *testing.T
	dir     string
	st      *storage.Store
	sys     *actor.ActorSystem
	reg     *stage.Registry
	strat   *supervisor.Strategy
	stages  []*stage.Stage
	w       *stage.Stage
	tp, gp  *stage.Stage
	off, ml *stage.Stage
	pp      *stage.Stage // the POP stage (request modes)
	pe      *pop.Engine
	prog    *Progress // the metalog's; the POP engine's ModesApplied
	dkick   *dispatch.Kicker
	tv      *topics.View
	gv      *groups.View
	role    *role.Holder
	// appends counts the metalog's appends on a rig without a writer
	// (set it before the first one).
	appends *atomic.Int64
}

// equalJSON compares two values by their JSON (nil and empty maps alike).
func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func newRig(t *testing.T, dir string, kind role.Kind) *rig {
	t.Helper()
	return newRigSized(t, dir, kind, 4<<20)
}

// newRigSized is newRig with CommitLog segments of segSize bytes.
func newRigSized(t *testing.T, dir string, kind role.Kind, segSize int64) *rig {
	t.Helper()
	return newRigWith(t, dir, kind, segSize, 20*time.Millisecond, true)
}

// newRigWith is newRigSized with the metalog's poll, and without the
// dispatch's Kick of the metalog when kick is false (the metalog then
// applies at its start, on its polls and on a Kick sent by the test).
func newRigWith(t *testing.T, dir string, kind role.Kind, segSize int64, poll time.Duration, kick bool) *rig {
	t.Helper()
	st, err := storage.Open(dir, storage.Options{SegmentSize: segSize})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: dir, st: st, sys: stage.NewSystem(zerolog.Nop()), dkick: &dispatch.Kicker{},
		tv: &topics.View{}, gv: &groups.View{}, role: role.NewHolder(role.State{Kind: kind, ReplicaID: 1})}
	r.reg = stage.NewRegistry(prometheus.NewRegistry())
	r.strat = supervisor.New(supervisor.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond})
	var mlp atomic.Pointer[stage.Stage] // set once the metalog stage is spawned
	toML := func(m any) {
		if s := mlp.Load(); s != nil {
			s.Send(m)
		}
	}
	send := func(s **stage.Stage) func(any) { return func(m any) { (*s).Send(m) } }
	st.Dispatched.Store(dispatch.StartOffset(st, zerolog.Nop()))
	r.spawn(dispatch.StageName, dispatch.Producer(dispatch.Options{Store: st, Notify: func(a []dispatch.Arrival) {
		for _, q := range a {
			if kick && metarec.IsSystemTopic(q.Topic) {
				toML(Kick{})
			}
		}
	}}, r.dkick))
	if kind != role.Replica {
		r.w = r.spawn(writer.StageName, writer.Producer(writer.Options{Store: st, Appended: r.dkick.Kick}))
	}
	r.tp = r.spawn(topics.StageName, topics.Producer(topics.Options{FS: st.FS, Path: st.TopicsPath(), View: r.tv,
		Changed: func() { toML(TopicsChanged{}) }}))
	r.gp = r.spawn(groups.StageName, groups.Producer(groups.Options{FS: st.FS, Path: st.SubscriptionGroupsPath(), View: r.gv,
		Changed: func() { toML(GroupsChanged{}) }}))
	r.off = r.spawn(offsets.StageName, offsets.Producer(offsets.Options{FS: st.FS, Path: st.OffsetsPath(),
		JournalInterval: 20 * time.Millisecond, Journal: func(o []metarec.Offset) { toML(&OffsetsChanged{Offsets: o}) },
		Dropped: func(g string) { toML(&OffsetsDropped{Group: g}) }}))
	r.prog = NewProgress(st)
	r.pe = pop.New(pop.Options{Store: st, Master: func() bool { return r.role.Get().IsMaster() },
		ModesChanged: func() { toML(ModesChanged{}) }, ModesApplied: r.prog.AppliedBelow, Logger: zerolog.Nop()})
	r.pp = r.spawn(pop.StageName, r.pe.Producer())
	opts := Options{Store: st, Role: r.role, Topics: r.tv, Groups: r.gv, SendTopics: send(&r.tp), SendGroups: send(&r.gp),
		SendOffsets: send(&r.off), SendPop: send(&r.pp), Modes: r.pe.Modes(), Progress: r.prog, StoreHost: host, Poll: poll, CursorInterval: 20 * time.Millisecond}
	if r.w != nil {
		w := r.w
		opts.Append = func(a *writer.Append) { w.Send(a) }
	} else {
		opts.Append = func(a *writer.Append) {
			if r.appends != nil {
				r.appends.Add(1)
			}
			a.Reply(writer.Result{Err: os.ErrPermission})
		}
	}
	// Spawned last; the stages above reach it through mlp once set (the
	// metalog's start reads their tables, so nothing is missed).
	r.ml = r.spawn(StageName, Producer(opts))
	mlp.Store(r.ml)
	r.dkick.Kick()
	t.Cleanup(r.close)
	return r
}

func (r *rig) spawn(name string, p stage.Producer) *stage.Stage {
	r.t.Helper()
	s, err := r.reg.Spawn(r.sys, r.strat, name, p)
	if err != nil {
		r.t.Fatal(err)
	}
	r.stages = append(r.stages, s)
	return s
}

func (r *rig) close() {
	if r.sys == nil {
		return
	}
	for i := len(r.stages) - 1; i >= 0; i-- {
		r.stages[i].Stop()
	}
	r.sys.Shutdown()
	_ = r.st.Close()
	r.sys = nil
}

// ask sends a request built around done and waits for its answer.
func ask(t *testing.T, s *stage.Stage, build func(done func(error)) any) {
	t.Helper()
	ch := make(chan error, 1)
	s.Send(build(func(err error) { ch <- err }))
	select {
	case err := <-ch:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal("no answer")
	}
}

// offsetsOf returns every committed offset of the rig, keyed.
func (r *rig) offsetsOf() map[string]int64 {
	r.t.Helper()
	ch := make(chan []metarec.Offset, 1)
	r.off.Send(&offsets.Snapshot{Reply: func(o []metarec.Offset) { ch <- o }})
	select {
	case offs := <-ch:
		m := map[string]int64{}
		for _, o := range offs {
			m[o.Topic+"/"+o.Group+"/"+string(rune('0'+o.QueueID))] = o.Offset
		}
		return m
	case <-time.After(wait):
		r.t.Fatal("offsets snapshot not answered")
		return nil
	}
}

// eventually retries cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sameState reports whether two rigs hold the same topics, groups and
// offsets.
func sameState(a, b *rig) bool {
	return equalJSON(a.tv.Load().Topics, b.tv.Load().Topics) &&
		equalJSON(a.gv.Load().Groups, b.gv.Load().Groups) &&
		equalJSON(a.offsetsOf(), b.offsetsOf())
}

// copyCommitLog copies the CommitLog files of src into dst (nothing else).
func copyCommitLog(t *testing.T, src, dst string) {
	t.Helper()
	from := filepath.Join(src, "commitlog")
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dst, "commitlog"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, "commitlog", e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
