package meta

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestDefaultTopics(t *testing.T) {
	tests := []struct {
		name       string
		broker     string
		cluster    string
		autoCreate bool
		want       map[string]TopicConfig
	}{
		{"auto create", "broker-a", "DefaultCluster", true, map[string]TopicConfig{
			"SELF_TEST_TOPIC":            {"SELF_TEST_TOPIC", 1, 1, 6, "SINGLE_TAG", 0, false, nil},
			"broker-a":                   {"broker-a", 1, 1, 7, "SINGLE_TAG", 0, false, nil},
			"DefaultCluster":             {"DefaultCluster", 1, 1, 7, "SINGLE_TAG", 0, false, nil},
			"TBW102":                     {"TBW102", 8, 8, 7, "SINGLE_TAG", 0, false, nil},
			"DefaultCluster_REPLY_TOPIC": {"DefaultCluster_REPLY_TOPIC", 1, 1, 6, "SINGLE_TAG", 0, false, nil},
		}},
		{"no auto create", "b", "c", false, map[string]TopicConfig{
			"SELF_TEST_TOPIC": {"SELF_TEST_TOPIC", 1, 1, 6, "SINGLE_TAG", 0, false, nil},
			"b":               {"b", 1, 1, 7, "SINGLE_TAG", 0, false, nil},
			"c":               {"c", 1, 1, 7, "SINGLE_TAG", 0, false, nil},
			"c_REPLY_TOPIC":   {"c_REPLY_TOPIC", 1, 1, 6, "SINGLE_TAG", 0, false, nil},
		}},
		{"empty names skipped", "", "", false, map[string]TopicConfig{
			"SELF_TEST_TOPIC": {"SELF_TEST_TOPIC", 1, 1, 6, "SINGLE_TAG", 0, false, nil},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DefaultTopics(tt.broker, tt.cluster, tt.autoCreate); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("DefaultTopics = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestPermHelpers(t *testing.T) {
	tests := []struct {
		perm           int32
		r, w, inherits bool
	}{
		{0, false, false, false},
		{PermRead, true, false, false},
		{PermWrite, false, true, false},
		{PermReadWrite, true, true, false},
		{PermReadWrite | PermInherit, true, true, true},
		{PermPriority | PermRead, true, false, false},
	}
	for _, tt := range tests {
		if IsReadable(tt.perm) != tt.r || IsWritable(tt.perm) != tt.w || IsInheritable(tt.perm) != tt.inherits {
			t.Errorf("perm %d: got r=%v w=%v i=%v", tt.perm, IsReadable(tt.perm), IsWritable(tt.perm), IsInheritable(tt.perm))
		}
	}
}

func sampleTopics() map[string]TopicConfig {
	m := DefaultTopics("broker-a", "DefaultCluster", true)
	m["TopicTest"] = NewTopicConfig("TopicTest", 4)
	m["%RETRY%G"] = NewTopicConfig("%RETRY%G", 1)
	return m
}

func TestTopicsRoundTripAndGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topics.json")
	v := DataVersion{Timestamp: 1700000000000, Counter: 5}
	if err := SaveTopics(nil, path, sampleTopics(), v); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "topics.json", data)
	got, gotV, err := LoadTopics(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sampleTopics()) || gotV != v {
		t.Fatalf("LoadTopics = %+v, %+v", got, gotV)
	}
	noTempFiles(t, filepath.Dir(path))
}

func TestLoadTopicsJavaStyle(t *testing.T) {
	got, v, err := LoadTopics(nil, filepath.Join("testdata", "topics_java_style.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]TopicConfig{
		"TBW102":    {"TBW102", 8, 8, 7, "SINGLE_TAG", 0, false, nil},
		"TopicTest": {"TopicTest", 4, 2, 6, "MULTI_TAG", 1, true, map[string]string{"message.type": "NORMAL"}},
	}
	if !reflect.DeepEqual(got, want) || v != (DataVersion{Timestamp: 1700000000000, Counter: 3}) {
		t.Fatalf("LoadTopics = %+v, %+v", got, v)
	}
}

func TestLoadTopicsMissing(t *testing.T) {
	got, v, err := LoadTopics(nil, filepath.Join(t.TempDir(), "topics.json"))
	if err != nil || got == nil || len(got) != 0 || v != (DataVersion{}) {
		t.Fatalf("LoadTopics(nil, missing) = %v, %v, %v; want empty map", got, v, err)
	}
}

func TestLoadTopicsValidation(t *testing.T) {
	tests := []struct {
		name    string
		content string
		ok      bool
	}{
		{"empty object", `{}`, true},
		{"name filled from key", `{"topicConfigTable":{"T":{"readQueueNums":1}}}`, true},
		{"empty file", ``, false},
		{"null", `null`, false},
		{"truncated", `{"topicConfigTable":{"T":{`, false},
		{"trailing garbage", `{} x`, false},
		{"name mismatch", `{"topicConfigTable":{"T":{"topicName":"U"}}}`, false},
		{"negative queues", `{"topicConfigTable":{"T":{"readQueueNums":-1}}}`, false},
		{"wrong type", `{"topicConfigTable":{"T":{"perm":"6"}}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "topics.json")
			mustWrite(t, path, tt.content)
			_, _, err := LoadTopics(nil, path)
			if (err == nil) != tt.ok {
				t.Fatalf("LoadTopics = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path)) {
				t.Fatalf("error %q must wrap ErrCorrupt and name the path", err)
			}
		})
	}
}

func TestTopicsBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "topics.json")
	v1 := map[string]TopicConfig{"A": NewTopicConfig("A", 1)}
	v2 := map[string]TopicConfig{"A": NewTopicConfig("A", 1), "B": NewTopicConfig("B", 2)}
	if err := SaveTopics(nil, path, v1, DataVersion{Counter: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + BackupSuffix); !os.IsNotExist(err) {
		t.Fatalf("first save created a backup: %v", err)
	}
	if err := SaveTopics(nil, path, v2, DataVersion{Counter: 2}); err != nil {
		t.Fatal(err)
	}
	// The backup holds v1.
	if got, v, err := LoadTopics(nil, path+BackupSuffix); err != nil || !reflect.DeepEqual(got, v1) || v.Counter != 1 {
		t.Fatalf("backup = %v, %v, %v", got, v, err)
	}

	// Corrupt main: fall back to the backup and log a warning.
	mustWrite(t, path, `{"topicConfigTable":`)
	var logBuf bytes.Buffer
	got, v, err := LoadTopics(nil, path, WithLogger(zerolog.New(&logBuf)))
	if err != nil || !reflect.DeepEqual(got, v1) || v.Counter != 1 {
		t.Fatalf("fallback = %v, %v, %v", got, v, err)
	}
	if !strings.Contains(logBuf.String(), `"level":"warn"`) || !strings.Contains(logBuf.String(), path) {
		t.Fatalf("no warning logged: %s", logBuf.String())
	}

	// Saving over a corrupt main keeps the good backup.
	if err := SaveTopics(nil, path, v2, DataVersion{Counter: 3}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := LoadTopics(nil, path+BackupSuffix); err != nil || !reflect.DeepEqual(got, v1) {
		t.Fatalf("backup after saving over corrupt main = %v, %v", got, err)
	}

	// Main missing, backup present: use the backup.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got, _, err := LoadTopics(nil, path); err != nil || !reflect.DeepEqual(got, v1) {
		t.Fatalf("missing main = %v, %v", got, err)
	}

	// Both unusable: an error naming the path, never a silent reset.
	mustWrite(t, path, `garbage`)
	mustWrite(t, path+BackupSuffix, `garbage`)
	if _, _, err := LoadTopics(nil, path); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("both corrupt = %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadTopics(nil, path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("missing main, corrupt backup = %v", err)
	}
	noTempFiles(t, dir)
}

func TestSaveUnchangedIsNoop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topics.json")
	m := map[string]TopicConfig{"A": NewTopicConfig("A", 1)}
	for range 3 {
		if err := SaveTopics(nil, path, m, DataVersion{Counter: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path + BackupSuffix); !os.IsNotExist(err) {
		t.Fatalf("unchanged saves created a backup: %v", err)
	}
}

func TestTopicTable(t *testing.T) {
	src := map[string]TopicConfig{"A": NewTopicConfig("A", 1)}
	t0 := NewTopicTable(src, DataVersion{Counter: 7})
	src["B"] = NewTopicConfig("B", 1) // the table copied its input
	if t0.Len() != 1 {
		t.Fatalf("table shares its input map")
	}
	now := time.UnixMilli(1700000000000)
	t1 := t0.With(now, NewTopicConfig("C", 3), NewTopicConfig("A", 2))
	if t0.Len() != 1 || t1.Len() != 2 {
		t.Fatalf("With changed the original: %d, %d", t0.Len(), t1.Len())
	}
	if c, _ := t1.Get("A"); c.WriteQueueNums != 2 {
		t.Fatalf("With did not replace A: %+v", c)
	}
	if v := t1.Version(); v.Counter != 8 || v.Timestamp != now.UnixMilli() {
		t.Fatalf("version = %+v", v)
	}
	t2 := t1.Without(now, "A", "missing")
	if _, ok := t2.Get("A"); ok || t2.Len() != 1 || t2.Version().Counter != 9 {
		t.Fatalf("Without: %v", t2.Names())
	}
	if _, ok := t1.Get("A"); !ok {
		t.Fatal("Without changed the original")
	}
	var order []string
	for name := range t1.All() {
		order = append(order, name)
	}
	if strings.Join(order, ",") != "A,C" || strings.Join(t1.Names(), ",") != "A,C" {
		t.Fatalf("order %v", order)
	}
	m := t1.Map()
	delete(m, "A")
	if t1.Len() != 2 {
		t.Fatal("Map returned the internal map")
	}
	path := filepath.Join(t.TempDir(), "topics.json")
	if err := t1.Save(nil, path); err != nil {
		t.Fatal(err)
	}
	got, v, err := LoadTopics(nil, path)
	if err != nil || !reflect.DeepEqual(got, t1.Map()) || v != t1.Version() {
		t.Fatalf("Save/Load = %v, %v, %v", got, v, err)
	}
}
