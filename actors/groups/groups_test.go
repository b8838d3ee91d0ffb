package groups

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/storage/meta"
)

const wait = 5 * time.Second

type rig struct {
	path    string
	sys     *actor.ActorSystem
	metrics *stage.Registry
	view    View
	s       *stage.Stage
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{
		path:    filepath.Join(t.TempDir(), "config", "subscriptionGroup.json"),
		sys:     stage.NewSystem(zerolog.Nop()),
		metrics: stage.NewRegistry(prometheus.NewRegistry()),
	}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o755); err != nil {
		t.Fatal(err)
	}
	r.start(t)
	t.Cleanup(func() {
		if r.s != nil {
			r.s.Stop()
		}
		r.sys.Shutdown()
	})
	return r
}

func (r *rig) start(t *testing.T) {
	t.Helper()
	s, err := r.metrics.Spawn(r.sys, supervisor.New(supervisor.Policy{}), StageName, Producer(Options{
		Path: r.path, Defaults: meta.DefaultSubscriptionGroups(), View: &r.view, Logger: zerolog.Nop(),
	}))
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	deadline := time.Now().Add(wait)
	for r.view.p.Load() == nil { // published in Started
		if time.Now().After(deadline) {
			t.Fatal("stage published no table")
		}
		time.Sleep(time.Millisecond)
	}
}

// call sends a message built around a done callback and waits for it.
func (r *rig) call(t *testing.T, msg func(done func(error)) any) error {
	t.Helper()
	ch := make(chan error, 1)
	r.s.Send(msg(func(err error) { ch <- err }))
	select {
	case err := <-ch:
		return err
	case <-time.After(wait):
		t.Fatal("request not answered")
		return nil
	}
}

func TestEnsurePutDeletePersist(t *testing.T) {
	r := newRig(t)
	if got := r.view.Load().Groups; !reflect.DeepEqual(got, meta.DefaultSubscriptionGroups()) {
		t.Fatalf("initial view %v, want the built-in groups", got)
	}
	custom := meta.NewSubscriptionGroupConfig("a")
	custom.RetryMaxTimes, custom.ConsumeEnable = 2, false
	var existed bool
	steps := []struct {
		name    string
		msg     func(done func(error)) any
		counter int64
		wantA   *meta.SubscriptionGroupConfig
	}{
		{"ensure creates with defaults", func(done func(error)) any {
			return &Ensure{Names: []string{"a", "b", "bad name"}, Done: done}
		}, 1, ptr(meta.NewSubscriptionGroupConfig("a"))},
		{"ensure of existing groups changes nothing", func(done func(error)) any {
			return &Ensure{Names: []string{"a", "b"}, Done: done}
		}, 1, ptr(meta.NewSubscriptionGroupConfig("a"))},
		{"put replaces", func(done func(error)) any { return &Put{Config: custom, Done: done} }, 2, &custom},
		{"delete", func(done func(error)) any {
			return &Delete{Name: "a", Done: func(e bool, err error) { existed = e; done(err) }}
		}, 3, nil},
		{"delete missing is a no-op", func(done func(error)) any {
			return &Delete{Name: "a", Done: func(e bool, err error) { existed = e; done(err) }}
		}, 3, nil},
	}
	for i, st := range steps {
		if err := r.call(t, st.msg); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, ok := r.view.Get("a")
		switch {
		case st.wantA == nil && ok:
			t.Errorf("%s: a still in the view", st.name)
		case st.wantA != nil && (!ok || !reflect.DeepEqual(got, *st.wantA)):
			t.Errorf("%s: a = %+v, want %+v", st.name, got, *st.wantA)
		}
		if _, ok := r.view.Get("bad name"); ok {
			t.Errorf("%s: an invalid name was created", st.name)
		}
		table, ver, err := meta.LoadSubscriptionGroups(nil, r.path)
		if err != nil {
			t.Fatal(err)
		}
		snap := r.view.Load()
		if !reflect.DeepEqual(table, snap.Groups) || ver != snap.Version || ver.Counter != st.counter {
			t.Errorf("%s: file v%d %v, view v%d %v, want counter %d", st.name, ver.Counter, table, snap.Version.Counter,
				snap.Groups, st.counter)
		}
		if i == 3 && !existed || i == 4 && existed {
			t.Errorf("%s: existed = %v", st.name, existed)
		}
	}
	before := r.view.Load()
	r.s.Stop()
	r.view.p.Store(nil)
	r.start(t)
	after := r.view.Load()
	if !reflect.DeepEqual(after.Groups, before.Groups) || after.Version != before.Version {
		t.Errorf("after restart: %v (v%+v), want %v (v%+v)", after.Groups, after.Version, before.Groups, before.Version)
	}
}

func TestFailedWriteChangesNothing(t *testing.T) {
	r := newRig(t)
	before := r.view.Load()
	cfg := filepath.Dir(r.path)
	if err := os.Rename(cfg, cfg+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.call(t, func(done func(error)) any { return &Ensure{Names: []string{"x"}, Done: done} }); err == nil {
		t.Error("Ensure succeeded although the file cannot be written")
	}
	if err := r.call(t, func(done func(error)) any {
		return &Put{Config: meta.NewSubscriptionGroupConfig("y"), Done: done}
	}); err == nil {
		t.Error("Put succeeded although the file cannot be written")
	}
	if after := r.view.Load(); after != before {
		t.Errorf("view changed after failed writes")
	}
}

func ptr[T any](v T) *T { return &v }
