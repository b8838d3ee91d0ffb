package namesrv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"

	"github.com/wheelmq/wheelmq/storage/lenient"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// KVConfigFile is the name of the KV configuration file in the name
// server's directory (RocketMQ's kvConfigPath ends the same way).
const KVConfigFile = "kvConfig.json"

// NamespaceOrderTopicConfig is RocketMQ's NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG:
// its keys are topics, its values "brokerName:queueNums;..." (the route's
// orderTopicConf and the REGISTER_BROKER response body).
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// KVConfig is the name server's KV configuration (RocketMQ's
// KVConfigManager): namespace -> key -> value. A KVConfig is immutable:
// With and Without return a new one that shares the namespaces they do not
// touch, so the owner can persist the next state before it replaces the
// current one, and any goroutine may read a KVConfig it was handed.
type KVConfig struct {
	table map[string]map[string]string
}

// NewKVConfig returns an empty KV configuration.
func NewKVConfig() *KVConfig {
	return &KVConfig{table: map[string]map[string]string{}}
}

// Get returns the value of key in namespace.
func (c *KVConfig) Get(namespace, key string) (string, bool) {
	v, ok := c.table[namespace][key]
	return v, ok
}

// Namespace returns a copy of one namespace's items. ok is false when the
// namespace does not exist; a namespace whose last key was deleted still
// exists, empty (as in Java).
func (c *KVConfig) Namespace(namespace string) (items map[string]string, ok bool) {
	ns, ok := c.table[namespace]
	if !ok {
		return nil, false
	}
	return maps.Clone(ns), true
}

// Len returns the number of items in all namespaces.
func (c *KVConfig) Len() int {
	n := 0
	for _, ns := range c.table {
		n += len(ns)
	}
	return n
}

// With returns the configuration with key in namespace set to value (the
// namespace created when missing).
func (c *KVConfig) With(namespace, key, value string) *KVConfig {
	next := &KVConfig{table: maps.Clone(c.table)}
	ns := maps.Clone(c.table[namespace])
	if ns == nil {
		ns = map[string]string{}
	}
	ns[key] = value
	next.table[namespace] = ns
	return next
}

// Without returns the configuration without key in namespace, and whether
// the key was there; when it was not, c itself. The namespace stays, even
// when it becomes empty (Java's KVConfigManager.deleteKVConfig).
func (c *KVConfig) Without(namespace, key string) (*KVConfig, bool) {
	if _, ok := c.table[namespace][key]; !ok {
		return c, false
	}
	next := &KVConfig{table: maps.Clone(c.table)}
	ns := maps.Clone(c.table[namespace])
	delete(ns, key)
	next.table[namespace] = ns
	return next, true
}

// kvConfigFile is the JSON shape of kvConfig.json (KVConfigSerializeWrapper).
type kvConfigFile struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// Encode returns the kvConfig.json content: {"configTable":{ns:{k:v}}},
// namespaces and keys sorted, indented by two spaces, ending in a newline,
// '<', '>' and '&' not escaped (as fastjson writes them).
func (c *KVConfig) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(kvConfigFile{ConfigTable: c.table}); err != nil {
		return nil, fmt.Errorf("namesrv encode kv config: %w", err)
	}
	return buf.Bytes(), nil
}

// ParseKVConfig decodes a kvConfig.json as wheelmq or a Java name server
// writes it. The document must be a JSON object; its configTable (absent
// or null: empty) an object of namespaces, each an object (null: left
// out) of values. A value is read as fastjson reads it into a String: a
// string as it is, any other JSON value as its text, null left out.
// Other top-level fields are ignored. Errors wrap ErrBadBody.
func ParseKVConfig(data []byte) (*KVConfig, error) {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%w: kv config: not a JSON object", ErrBadBody)
	}
	var doc struct {
		ConfigTable map[string]map[string]json.RawMessage `json:"configTable"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: kv config: %v", ErrBadBody, err)
	}
	c := NewKVConfig()
	for name, raw := range doc.ConfigTable {
		if raw == nil {
			continue // "ns": null
		}
		ns := make(map[string]string, len(raw))
		for key, v := range raw {
			s, set, err := lenient.ParseString(v)
			if err != nil {
				return nil, fmt.Errorf("%w: kv config: namespace %q key %q: %v", ErrBadBody, name, key, err)
			}
			if set {
				ns[key] = s
			}
		}
		c.table[name] = ns
	}
	return c, nil
}

// LoadKVConfig reads the KV configuration file at path; a missing file is
// an empty configuration. A file that does not parse is an error naming
// it (wrapping ErrBadBody): it is never replaced by an empty table. A nil
// fsys is the real file system.
func LoadKVConfig(fsys vfs.FS, path string) (*KVConfig, error) {
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return NewKVConfig(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("namesrv load kv config %s: %w", path, err)
	}
	c, err := ParseKVConfig(data)
	if err != nil {
		return nil, fmt.Errorf("namesrv load kv config %s (fix or remove the file): %w", path, err)
	}
	return c, nil
}

// SaveKVConfig writes c to path atomically (vfs.WriteFileAtomic: a
// temporary file, fsync, rename, fsync of the directory), creating the
// directory when missing. A nil fsys is the real file system.
func SaveKVConfig(fsys vfs.FS, path string, c *KVConfig) error {
	data, err := c.Encode()
	if err != nil {
		return err
	}
	if err := vfs.MkdirAllSynced(fsys, filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("namesrv save kv config: %w", err)
	}
	if err := vfs.WriteFileAtomic(fsys, path, data, 0o644); err != nil {
		return fmt.Errorf("namesrv save kv config: %w", err)
	}
	return nil
}
