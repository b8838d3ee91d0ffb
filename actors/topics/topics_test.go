package topics

import (
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
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
	path     string
	defaults map[string]meta.TopicConfig
	sys      *actor.ActorSystem
	metrics  *stage.Registry
	view     View
	changed  atomic.Int32
	s        *stage.Stage
}

func newRig(t *testing.T) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{
		path:     filepath.Join(dir, "config", "topics.json"),
		defaults: meta.DefaultTopics("broker-a", "DefaultCluster", true),
		sys:      stage.NewSystem(zerolog.Nop()),
		metrics:  stage.NewRegistry(prometheus.NewRegistry()),
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
		Path: r.path, Defaults: r.defaults, View: &r.view, Changed: func() { r.changed.Add(1) },
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

func (r *rig) ensure(t *testing.T, c meta.TopicConfig) (meta.TopicConfig, error) {
	t.Helper()
	type res struct {
		c   meta.TopicConfig
		err error
	}
	ch := make(chan res, 1)
	r.s.Send(&Ensure{Config: c, Done: func(c meta.TopicConfig, err error) { ch <- res{c, err} }})
	select {
	case x := <-ch:
		return x.c, x.err
	case <-time.After(wait):
		t.Fatal("Ensure not answered")
		return meta.TopicConfig{}, nil
	}
}

func (r *rig) do(t *testing.T, msg func(done func(error)) any) error {
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

func (r *rig) put(t *testing.T, c meta.TopicConfig) error {
	t.Helper()
	return r.do(t, func(done func(error)) any { return &Put{Config: c, Done: done} })
}

func (r *rig) del(t *testing.T, name string) error {
	t.Helper()
	return r.do(t, func(done func(error)) any { return &Delete{Topic: name, Done: done} })
}

// reload reads the file back as a restarted broker would.
func reload(t *testing.T, path string) (map[string]meta.TopicConfig, meta.DataVersion) {
	t.Helper()
	table, ver, err := Load(nil, path, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return table, ver
}

func TestLoadMergesDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topics.json")
	defaults := map[string]meta.TopicConfig{"D": meta.NewTopicConfig("D", 1), "E": meta.NewTopicConfig("E", 1)}
	table, ver, err := Load(nil, path, defaults, zerolog.Nop())
	if err != nil || !reflect.DeepEqual(table, defaults) || ver != (meta.DataVersion{}) {
		t.Fatalf("missing file: Load = %v, %+v, %v; want the defaults", table, ver, err)
	}
	onFile := map[string]meta.TopicConfig{"D": meta.NewTopicConfig("D", 4), "X": meta.NewTopicConfig("X", 2)}
	if err := meta.SaveTopics(nil, path, onFile, meta.DataVersion{Counter: 7}); err != nil {
		t.Fatal(err)
	}
	table, ver, err = Load(nil, path, defaults, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]meta.TopicConfig{"D": onFile["D"], "E": defaults["E"], "X": onFile["X"]}
	if !reflect.DeepEqual(table, want) || ver.Counter != 7 {
		t.Errorf("Load = %v (counter %d), want %v (counter 7): the file wins over defaults", table, ver.Counter, want)
	}
}

func TestEnsurePutDeletePersist(t *testing.T) {
	r := newRig(t)
	if got := r.view.Load().Topics; !reflect.DeepEqual(got, r.defaults) {
		t.Fatalf("initial view %v, want the defaults", got)
	}
	a := meta.NewTopicConfig("A", 4)
	steps := []struct {
		name        string
		run         func() error
		wantChanged int32
		wantA       *meta.TopicConfig // nil: A absent
	}{
		{"ensure creates", func() error {
			got, err := r.ensure(t, a)
			if !reflect.DeepEqual(got, a) {
				t.Errorf("Ensure returned %+v, want %+v", got, a)
			}
			return err
		}, 1, &a},
		{"ensure keeps the existing topic", func() error {
			got, err := r.ensure(t, meta.NewTopicConfig("A", 16))
			if !reflect.DeepEqual(got, a) {
				t.Errorf("Ensure of an existing topic returned %+v, want the existing %+v", got, a)
			}
			return err
		}, 1, &a},
		{"put replaces", func() error { return r.put(t, meta.NewTopicConfig("A", 2)) }, 2,
			&meta.TopicConfig{TopicName: "A", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6, TopicFilterType: "SINGLE_TAG"}},
		{"put another", func() error { return r.put(t, meta.NewTopicConfig("B", 1)) }, 3,
			&meta.TopicConfig{TopicName: "A", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6, TopicFilterType: "SINGLE_TAG"}},
		{"delete", func() error { return r.del(t, "A") }, 4, nil},
		{"delete missing is a no-op", func() error { return r.del(t, "A") }, 4, nil},
	}
	for _, st := range steps {
		if err := st.run(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := r.changed.Load(); got != st.wantChanged {
			t.Errorf("%s: Changed called %d times, want %d", st.name, got, st.wantChanged)
		}
		got, ok := r.view.Get("A")
		switch {
		case st.wantA == nil && ok:
			t.Errorf("%s: A still in the view: %+v", st.name, got)
		case st.wantA != nil && (!ok || !reflect.DeepEqual(got, *st.wantA)):
			t.Errorf("%s: view A = %+v (%v), want %+v", st.name, got, ok, *st.wantA)
		}
		// The file always holds exactly the published table.
		table, ver := reload(t, r.path)
		snap := r.view.Load()
		if st.wantChanged > 0 && (!reflect.DeepEqual(table, snap.Topics) || ver != snap.Version) {
			t.Errorf("%s: file holds %v (v%d), view %v (v%d)", st.name, table, ver.Counter, snap.Topics, snap.Version.Counter)
		}
		if ver.Counter != int64(st.wantChanged) {
			t.Errorf("%s: version counter %d, want %d", st.name, ver.Counter, st.wantChanged)
		}
	}
	if _, ok := r.view.Get("B"); !ok {
		t.Error("B missing from the view")
	}

	// A restarted stage publishes the same table and version.
	before := r.view.Load()
	r.s.Stop()
	r.view.p.Store(nil)
	r.start(t)
	after := r.view.Load()
	if !reflect.DeepEqual(after.Topics, before.Topics) || after.Version != before.Version {
		t.Errorf("after restart: %v (v%+v), want %v (v%+v)", after.Topics, after.Version, before.Topics, before.Version)
	}
}

func TestOldSnapshotsAreImmutable(t *testing.T) {
	r := newRig(t)
	old := r.view.Load()
	n := len(old.Topics)
	if err := r.put(t, meta.NewTopicConfig("New", 1)); err != nil {
		t.Fatal(err)
	}
	if len(old.Topics) != n {
		t.Errorf("an earlier snapshot grew from %d to %d topics", n, len(old.Topics))
	}
}

func TestFailedWriteChangesNothing(t *testing.T) {
	r := newRig(t)
	if err := r.put(t, meta.NewTopicConfig("A", 4)); err != nil {
		t.Fatal(err)
	}
	before := r.view.Load()
	changed := r.changed.Load()

	// Turn the config directory into a regular file: the topics file's
	// parent is no longer a directory and every write fails.
	cfg := filepath.Dir(r.path)
	moved := cfg + ".moved"
	if err := os.Rename(cfg, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ensure(t, meta.NewTopicConfig("C", 1)); err == nil {
		t.Error("Ensure succeeded although the file cannot be written")
	}
	if err := r.put(t, meta.NewTopicConfig("B", 1)); err == nil {
		t.Error("Put succeeded although the file cannot be written")
	}
	if err := r.put(t, meta.NewTopicConfig("A", 9)); err == nil {
		t.Error("Put (replace) succeeded although the file cannot be written")
	}
	if err := r.del(t, "A"); err == nil {
		t.Error("Delete succeeded although the file cannot be written")
	}
	after := r.view.Load()
	if after != before {
		t.Errorf("view changed after failed writes: %v -> %v", before.Topics, after.Topics)
	}
	if got := r.changed.Load(); got != changed {
		t.Errorf("Changed called %d times for failed writes", got-changed)
	}

	// Back to a directory: the old file is intact and the next change
	// continues the version sequence.
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, cfg); err != nil {
		t.Fatal(err)
	}
	table, ver := reload(t, r.path)
	if !reflect.DeepEqual(table, before.Topics) || ver != before.Version {
		t.Errorf("file after failed writes = %v (v%+v), want %v (v%+v)", table, ver, before.Topics, before.Version)
	}
	if err := r.put(t, meta.NewTopicConfig("B", 1)); err != nil {
		t.Fatal(err)
	}
	if _, ver := reload(t, r.path); ver.Counter != before.Version.Counter+1 {
		t.Errorf("version counter %d after recovery, want %d", ver.Counter, before.Version.Counter+1)
	}
}
