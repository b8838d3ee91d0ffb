package meta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// OffsetKeySeparator joins topic and group in an OffsetTable key.
const OffsetKeySeparator = "@"

// OffsetTable holds committed consumer offsets (the next offset to consume),
// keyed by OffsetKey(topic, group) and then by queue id, like RocketMQ's
// consumerOffset.json. It is a plain value: its owner serializes access.
type OffsetTable map[string]map[int32]int64

// OffsetKey returns the table key "topic@group".
func OffsetKey(topic, group string) string { return topic + OffsetKeySeparator + group }

// SplitOffsetKey splits "topic@group" at the first "@" (topic names cannot
// contain one).
func SplitOffsetKey(key string) (topic, group string, ok bool) {
	topic, group, ok = strings.Cut(key, OffsetKeySeparator)
	return topic, group, ok && topic != "" && group != ""
}

// Get returns the committed offset of a queue.
func (t OffsetTable) Get(topic, group string, queueID int32) (int64, bool) {
	off, ok := t[OffsetKey(topic, group)][queueID]
	return off, ok
}

// Set records the committed offset of a queue. t must not be nil.
func (t OffsetTable) Set(topic, group string, queueID int32, offset int64) {
	key := OffsetKey(topic, group)
	q := t[key]
	if q == nil {
		q = make(map[int32]int64)
		t[key] = q
	}
	q[queueID] = offset
}

// DropTopic removes the offsets of every group for topic.
func (t OffsetTable) DropTopic(topic string) {
	for key := range t {
		if tp, _, ok := SplitOffsetKey(key); ok && tp == topic {
			delete(t, key)
		}
	}
}

// DropGroup removes the offsets of group for every topic.
func (t OffsetTable) DropGroup(group string) {
	for key := range t {
		if _, g, ok := SplitOffsetKey(key); ok && g == group {
			delete(t, key)
		}
	}
}

// GroupsOf returns the groups that have offsets for topic, sorted.
func (t OffsetTable) GroupsOf(topic string) []string {
	var out []string
	for key := range t {
		if tp, g, ok := SplitOffsetKey(key); ok && tp == topic {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// TopicsOf returns the topics group has offsets for, sorted.
func (t OffsetTable) TopicsOf(group string) []string {
	var out []string
	for key := range t {
		if tp, g, ok := SplitOffsetKey(key); ok && g == group {
			out = append(out, tp)
		}
	}
	slices.Sort(out)
	return out
}

// Clone returns a deep copy of t (for handing a snapshot to a saver).
func (t OffsetTable) Clone() OffsetTable {
	c := make(OffsetTable, len(t))
	for k, q := range t {
		c[k] = maps.Clone(q)
	}
	return c
}

// offsetsFile is the JSON shape of consumerOffset.json.
type offsetsFile struct {
	OffsetTable OffsetTable `json:"offsetTable"`
}

// parseOffsets decodes and validates a consumerOffset.json document.
func parseOffsets(data []byte) (OffsetTable, error) {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	var f offsetsFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.OffsetTable == nil {
		f.OffsetTable = OffsetTable{}
	}
	for key, q := range f.OffsetTable {
		if _, _, ok := SplitOffsetKey(key); !ok {
			return nil, fmt.Errorf("offset key %q is not topic@group", key)
		}
		if q == nil {
			f.OffsetTable[key] = map[int32]int64{}
		}
	}
	return f.OffsetTable, nil
}

// LoadOffsets reads a consumer offsets file written by SaveOffsets, falling
// back to its .bak file as described in the package doc. When neither exists
// it returns an empty table.
func LoadOffsets(fs vfs.FS, path string, opts ...Option) (OffsetTable, error) {
	o := buildOptions(opts)
	t, _, err := loadWithBackup(fs, path, o.log, parseOffsets)
	if err != nil {
		return nil, err
	}
	if t == nil {
		t = OffsetTable{}
	}
	return t, nil
}

// SaveOffsets writes t to path as {"offsetTable":{"T@G":{"0":12}}},
// keeping the previous file as .bak.
func SaveOffsets(fs vfs.FS, path string, t OffsetTable) error {
	if t == nil {
		t = OffsetTable{}
	}
	data, err := json.MarshalIndent(offsetsFile{OffsetTable: t}, "", "  ")
	if err != nil {
		return fmt.Errorf("meta save %s: %w", path, err)
	}
	return saveWithBackup(fs, path, append(data, '\n'), func(b []byte) bool {
		_, err := parseOffsets(b)
		return err == nil
	})
}
