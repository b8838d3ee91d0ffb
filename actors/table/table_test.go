package table

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// rig is a topic table on real files (storage/meta's topics.json
// functions), recording what it publishes.
type rig struct {
	opts      Options[meta.TopicConfig]
	published []map[string]meta.TopicConfig
	versions  []meta.DataVersion
	changed   int
	failSave  error
	log       bytes.Buffer
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{}
	r.opts = Options[meta.TopicConfig]{
		What: "topics", Path: filepath.Join(t.TempDir(), "topics.json"), Load: meta.LoadTopics,
		Save: func(fs vfs.FS, path string, records map[string]meta.TopicConfig, v meta.DataVersion) error {
			if r.failSave != nil {
				return r.failSave
			}
			return meta.SaveTopics(fs, path, records, v)
		},
		Defaults: map[string]meta.TopicConfig{"D": meta.NewTopicConfig("D", 1)},
		Publish: func(records map[string]meta.TopicConfig, v meta.DataVersion) {
			r.published = append(r.published, records)
			r.versions = append(r.versions, v)
		},
		Changed: func() { r.changed++ },
		Logger:  zerolog.New(&r.log),
	}
	return r
}

// onFile reads the table's file as a restarted broker would.
func (r *rig) onFile(t *testing.T) (map[string]meta.TopicConfig, meta.DataVersion) {
	t.Helper()
	records, ver, err := meta.LoadTopics(nil, r.opts.Path)
	if err != nil {
		t.Fatal(err)
	}
	return records, ver
}

func TestStartMergesDefaultsUnderTheFile(t *testing.T) {
	r := newRig(t)
	onFile := map[string]meta.TopicConfig{"D": meta.NewTopicConfig("D", 8), "X": meta.NewTopicConfig("X", 2)}
	if err := meta.SaveTopics(nil, r.opts.Path, onFile, meta.DataVersion{Counter: 5}); err != nil {
		t.Fatal(err)
	}
	r.opts.Defaults["E"] = meta.NewTopicConfig("E", 1)
	tab := New(r.opts)
	if err := tab.Start(); err != nil {
		t.Fatal(err)
	}
	want := map[string]meta.TopicConfig{"D": onFile["D"], "E": r.opts.Defaults["E"], "X": onFile["X"]}
	if len(r.published) != 1 || !maps.EqualFunc(r.published[0], want, meta.TopicConfig.Equal) || r.versions[0].Counter != 5 {
		t.Fatalf("published %v (%v), want %v at counter 5: the file wins over the defaults", r.published, r.versions, want)
	}
	if c, ok := tab.Get("X"); !ok || !c.Equal(onFile["X"]) {
		t.Errorf("Get(X) = %+v, %v", c, ok)
	}
	if r.changed != 0 {
		t.Errorf("Changed called %d times by Start", r.changed)
	}
}

func TestChangePersistsThenPublishes(t *testing.T) {
	r := newRig(t)
	tab := New(r.opts)
	if err := tab.Start(); err != nil {
		t.Fatal(err)
	}
	first := r.published[0]
	for i, fn := range []func(map[string]meta.TopicConfig){
		func(m map[string]meta.TopicConfig) { m["A"] = meta.NewTopicConfig("A", 4) },
		func(m map[string]meta.TopicConfig) { delete(m, "D") },
	} {
		if err := tab.Change(fn); err != nil {
			t.Fatal(err)
		}
		records, ver := r.onFile(t)
		last := r.published[len(r.published)-1]
		if !maps.EqualFunc(records, last, meta.TopicConfig.Equal) || ver != r.versions[len(r.versions)-1] || ver.Counter != int64(i+1) {
			t.Errorf("change %d: file %v (%+v), published %v (%+v)", i, records, ver, last, r.versions[len(r.versions)-1])
		}
		if r.changed != i+1 {
			t.Errorf("change %d: Changed called %d times", i, r.changed)
		}
	}
	if _, ok := first["A"]; ok || len(first) != 1 {
		t.Errorf("the first snapshot was modified: %v", first)
	}
}

func TestFailedSaveChangesNothing(t *testing.T) {
	r := newRig(t)
	tab := New(r.opts)
	if err := tab.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tab.Change(func(m map[string]meta.TopicConfig) { m["A"] = meta.NewTopicConfig("A", 1) }); err != nil {
		t.Fatal(err)
	}
	published, changed := len(r.published), r.changed
	r.failSave = errors.New("disk says no")
	err := tab.Change(func(m map[string]meta.TopicConfig) { delete(m, "A"); m["B"] = meta.NewTopicConfig("B", 1) })
	if !errors.Is(err, r.failSave) || !strings.Contains(err.Error(), "persist topics") {
		t.Fatalf("Change = %v, want the save error wrapped as persist topics", err)
	}
	if _, ok := tab.Get("A"); !ok {
		t.Error("a failed change removed A")
	}
	if _, ok := tab.Get("B"); ok {
		t.Error("a failed change added B")
	}
	if len(r.published) != published || r.changed != changed {
		t.Errorf("a failed change published (%d -> %d) or kicked (%d -> %d)", published, len(r.published), changed, r.changed)
	}
	if !strings.Contains(r.log.String(), "persist topics failed") {
		t.Errorf("no log line for the failed write: %q", r.log.String())
	}
	r.failSave = nil
	if err := tab.Change(func(m map[string]meta.TopicConfig) { m["B"] = meta.NewTopicConfig("B", 1) }); err != nil {
		t.Fatal(err)
	}
	if _, ver := r.onFile(t); ver.Counter != 2 {
		t.Errorf("counter %d after the failed change, want 2 (the failed one used no version)", ver.Counter)
	}
}

func TestLoadFallsBackToTheBackupAndSaysSo(t *testing.T) {
	r := newRig(t)
	good := map[string]meta.TopicConfig{"G": meta.NewTopicConfig("G", 3)}
	if err := meta.SaveTopics(nil, r.opts.Path, good, meta.DataVersion{Counter: 1}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(r.opts.Path, r.opts.Path+meta.BackupSuffix); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.opts.Path, []byte(`{"topicConfigTable":`), 0o644); err != nil { // torn
		t.Fatal(err)
	}
	records, ver, err := Load(r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if !records["G"].Equal(good["G"]) || ver.Counter != 1 {
		t.Errorf("Load = %v (%+v), want the backup's table", records, ver)
	}
	if !strings.Contains(r.log.String(), "using backup file") {
		t.Errorf("the fallback to the backup was not logged: %q", r.log.String())
	}
}
