package meta

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func sampleOffsets() OffsetTable {
	t := OffsetTable{}
	t.Set("TopicTest", "G1", 0, 12)
	t.Set("TopicTest", "G1", 1, 7)
	t.Set("%RETRY%G1", "G1", 0, 0)
	t.Set("Other", "G2", 3, 1<<40)
	return t
}

func offsetsEqual(a, b OffsetTable) bool {
	return maps.EqualFunc(a, b, func(x, y map[int32]int64) bool { return maps.Equal(x, y) })
}

func TestOffsetTable(t *testing.T) {
	tab := sampleOffsets()
	if off, ok := tab.Get("TopicTest", "G1", 1); !ok || off != 7 {
		t.Fatalf("Get = %d, %v", off, ok)
	}
	if _, ok := tab.Get("TopicTest", "G1", 5); ok {
		t.Fatal("Get found a missing queue")
	}
	if _, ok := tab.Get("Nope", "G1", 0); ok {
		t.Fatal("Get found a missing topic")
	}
	c := tab.Clone()
	c.Set("TopicTest", "G1", 1, 100)
	if off, _ := tab.Get("TopicTest", "G1", 1); off != 7 {
		t.Fatal("Clone shares queue maps")
	}
}

func TestOffsetTableDropTopic(t *testing.T) {
	tab := sampleOffsets()
	tab.Set("TopicTest", "G2", 0, 3)
	tab.DropTopic("TopicTest")
	want := OffsetTable{"%RETRY%G1@G1": {0: 0}, "Other@G2": {3: 1 << 40}}
	if !offsetsEqual(tab, want) {
		t.Fatalf("after DropTopic: %v", tab)
	}
	tab.DropTopic("missing")
	if !offsetsEqual(tab, want) {
		t.Fatalf("DropTopic of a missing topic changed the table: %v", tab)
	}
}

func TestOffsetTableGroupHelpers(t *testing.T) {
	tab := sampleOffsets()
	tab.Set("TopicTest", "G2", 0, 3)
	if got := tab.TopicsOf("G1"); !slices.Equal(got, []string{"%RETRY%G1", "TopicTest"}) {
		t.Fatalf("TopicsOf(G1) = %v", got)
	}
	tab.DropGroup("G1")
	want := OffsetTable{"Other@G2": {3: 1 << 40}, "TopicTest@G2": {0: 3}}
	if !offsetsEqual(tab, want) || tab.TopicsOf("G1") != nil {
		t.Fatalf("after DropGroup: %v", tab)
	}
}

func TestSplitOffsetKey(t *testing.T) {
	tests := []struct {
		key, topic, group string
		ok                bool
	}{
		{"T@G", "T", "G", true},
		{"%RETRY%G@G", "%RETRY%G", "G", true},
		{"T@G@x", "T", "G@x", true},
		{"TG", "", "", false},
		{"@G", "", "G", false},
		{"T@", "T", "", false},
	}
	for _, tt := range tests {
		topic, group, ok := SplitOffsetKey(tt.key)
		if ok != tt.ok || (ok && (topic != tt.topic || group != tt.group)) {
			t.Errorf("SplitOffsetKey(%q) = %q, %q, %v", tt.key, topic, group, ok)
		}
	}
	if OffsetKey("T", "G") != "T@G" {
		t.Error("OffsetKey")
	}
}

func TestOffsetsRoundTripAndGolden(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "consumerOffset.json")
	if err := SaveOffsets(nil, path, sampleOffsets()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "consumerOffset.json", data)
	got, err := LoadOffsets(nil, path)
	if err != nil || !offsetsEqual(got, sampleOffsets()) {
		t.Fatalf("LoadOffsets = %v, %v", got, err)
	}
	// Missing file: empty, usable table.
	empty, err := LoadOffsets(nil, filepath.Join(dir, "none.json"))
	if err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("LoadOffsets(nil, missing) = %v, %v", empty, err)
	}
	empty.Set("T", "G", 0, 1)
	noTempFiles(t, dir)
}

func TestLoadOffsetsValidation(t *testing.T) {
	tests := []struct {
		name, content string
		ok            bool
	}{
		{"compact", `{"offsetTable":{"T@G":{"0":12}}}`, true},
		{"null queues", `{"offsetTable":{"T@G":null}}`, true},
		{"empty", `{}`, true},
		{"bad key", `{"offsetTable":{"TG":{"0":12}}}`, false},
		{"non-numeric queue", `{"offsetTable":{"T@G":{"x":12}}}`, false},
		{"queue id overflow", `{"offsetTable":{"T@G":{"4294967296":12}}}`, false},
		{"string offset", `{"offsetTable":{"T@G":{"0":"12"}}}`, false},
		{"truncated", `{"offsetTable":{"T@G":{"0":12}`, false},
		{"array", `[]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "consumerOffset.json")
			mustWrite(t, path, tt.content)
			_, err := LoadOffsets(nil, path)
			if (err == nil) != tt.ok {
				t.Fatalf("LoadOffsets = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path)) {
				t.Fatalf("error %q must wrap ErrCorrupt and name the path", err)
			}
		})
	}
}

func TestOffsetsBackupFallback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "consumerOffset.json")
	first := sampleOffsets()
	if err := SaveOffsets(nil, path, first); err != nil {
		t.Fatal(err)
	}
	second := first.Clone()
	second.Set("TopicTest", "G1", 0, 99)
	if err := SaveOffsets(nil, path, second); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, path, "{\"offsetTable\":{\"T@G\":{\"0\":1") // torn by hand
	got, err := LoadOffsets(nil, path)
	if err != nil || !offsetsEqual(got, first) {
		t.Fatalf("fallback = %v, %v; want the previous version", got, err)
	}
}
