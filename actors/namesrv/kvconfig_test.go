package namesrv

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// kvOf builds a configuration from namespace -> items.
func kvOf(table map[string]map[string]string) *KVConfig {
	c := NewKVConfig()
	for ns, items := range table {
		c.table[ns] = maps.Clone(items)
	}
	return c
}

// sameKV reports whether two configurations hold the same namespaces and
// items.
func sameKV(a, b *KVConfig) bool {
	return maps.EqualFunc(a.table, b.table, func(x, y map[string]string) bool { return maps.Equal(x, y) })
}

// TestKVConfigFileGolden pins what wheelmq writes and reads it back.
func TestKVConfigFileGolden(t *testing.T) {
	c := kvOf(map[string]map[string]string{
		NamespaceOrderTopicConfig: {"orders": "broker-a:4;broker-b:4", "audit": "broker-a:1"},
		"app":                     {"<html>": "a&b", "empty": ""},
		"drained":                 {},
	})
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "kvConfig.json", data)
	back, err := ParseKVConfig(data)
	if err != nil || !sameKV(back, c) {
		t.Fatalf("round trip %+v %v", back, err)
	}
}

// TestParseKVConfig reads files as a Java name server writes them, and
// refuses damaged ones.
func TestParseKVConfig(t *testing.T) {
	tests := []struct {
		name string
		data string
		want map[string]map[string]string // nil: an error
	}{
		{name: "java compact", data: string(readTestdata(t, "kvConfig_java.json")), want: map[string]map[string]string{
			NamespaceOrderTopicConfig: {"orders": "broker-a:4;broker-b:4"}, "drained": {}}},
		{name: "empty object", data: `{}`, want: map[string]map[string]string{}},
		{name: "null table", data: ` {"configTable":null}`, want: map[string]map[string]string{}},
		{name: "null namespace and value left out", data: `{"configTable":{"a":null,"b":{"k":null,"v":"x"}}}`,
			want: map[string]map[string]string{"b": {"v": "x"}}},
		{name: "values as fastjson reads them into a String", data: `{"configTable":{"n":{"i":4,"f":1.50,"b":true,"o":{"x":[1]}}}}`,
			want: map[string]map[string]string{"n": {"i": "4", "f": "1.50", "b": "true", "o": `{"x":[1]}`}}},
		{name: "other fields ignored", data: `{"dataVersion":{"counter":1},"configTable":{"a":{"k":"v"}}}`,
			want: map[string]map[string]string{"a": {"k": "v"}}},
		{name: "empty file", data: ``},
		{name: "white space", data: " \n"},
		{name: "array", data: `[]`},
		{name: "truncated", data: `{"configTable":{"a":{"k":"v"}`},
		{name: "table not an object", data: `{"configTable":[]}`},
		{name: "namespace not an object", data: `{"configTable":{"a":"k=v"}}`},
		{name: "trailing garbage", data: `{"configTable":{}}x`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseKVConfig([]byte(tc.data))
			if tc.want == nil {
				if err == nil || !errors.Is(err, ErrBadBody) {
					t.Fatalf("want ErrBadBody, got %v (%+v)", err, c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sameKV(c, kvOf(tc.want)) {
				t.Fatalf("got %v, want %v", c.table, tc.want)
			}
		})
	}
}

// TestLoadSaveKVConfig: a missing file is empty, a saved one loads back, a
// damaged one is an error naming it and is left as it is.
func TestLoadSaveKVConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "namesrv")
	path := filepath.Join(dir, KVConfigFile)
	c, err := LoadKVConfig(nil, path)
	if err != nil || c.Len() != 0 {
		t.Fatalf("missing file: %+v %v", c, err)
	}
	c = c.With("ns", "k", "v").With(NamespaceOrderTopicConfig, "T", "broker-a:4")
	if err := SaveKVConfig(nil, path, c); err != nil { // creates dir
		t.Fatal(err)
	}
	back, err := LoadKVConfig(nil, path)
	if err != nil || !sameKV(back, c) {
		t.Fatalf("load back %+v %v", back, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != KVConfigFile {
		t.Fatalf("directory holds %v, want only %s (no temporary files)", entries, KVConfigFile)
	}

	damaged := []byte(`{"configTable":{"ns":{"k":"v"`)
	if err := os.WriteFile(path, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadKVConfig(nil, path)
	if err == nil || !errors.Is(err, ErrBadBody) || !strings.Contains(err.Error(), path) {
		t.Fatalf("damaged file: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(damaged) {
		t.Fatal("loading changed the damaged file")
	}

	if err := os.Chmod(path, 0); err == nil && os.Geteuid() != 0 {
		if _, err := LoadKVConfig(nil, path); err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("unreadable file: %v", err)
		}
	}
}

// TestSaveKVConfigFullDisk: a failed write leaves the previous file whole.
func TestSaveKVConfigFullDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), KVConfigFile)
	fs := &vfstest.FaultFS{}
	old := NewKVConfig().With("ns", "k", "old")
	if err := SaveKVConfig(fs, path, old); err != nil {
		t.Fatal(err)
	}
	fs.Full(true)
	if err := SaveKVConfig(fs, path, old.With("ns", "k", "new")); err == nil || !fs.Hit() {
		t.Fatalf("save on a full disk: %v", err)
	}
	fs.Full(false)
	back, err := LoadKVConfig(fs, path)
	if err != nil || !sameKV(back, old) {
		t.Fatalf("after a failed save: %+v %v", back, err)
	}
}

// TestKVConfigImmutable: With and Without leave the receiver as it was.
func TestKVConfigImmutable(t *testing.T) {
	a := NewKVConfig().With("ns", "k", "1")
	b := a.With("ns", "k", "2").With("ns", "j", "3")
	c, ok := b.Without("ns", "k")
	if !ok {
		t.Fatal("Without missed a key")
	}
	if d, ok := c.Without("ns", "k"); ok || d != c {
		t.Fatal("Without of an absent key made a new configuration")
	}
	if v, _ := a.Get("ns", "k"); v != "1" || a.Len() != 1 {
		t.Fatalf("a changed: %v", a.table)
	}
	if v, _ := b.Get("ns", "k"); v != "2" || b.Len() != 2 {
		t.Fatalf("b changed: %v", b.table)
	}
	items, _ := c.Namespace("ns")
	items["x"] = "y"
	if _, ok := c.Get("ns", "x"); ok {
		t.Fatal("Namespace returned the configuration's own map")
	}
}
