package meta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Topic defaults (RocketMQ TopicConfig / BrokerConfig).
const (
	// FilterSingleTag is the topicFilterType of ordinary topics.
	FilterSingleTag = "SINGLE_TAG"
	// FilterMultiTag is the topicFilterType of multi-tag topics.
	FilterMultiTag = "MULTI_TAG"
	// DefaultTopicQueueNums is TBW102's queue count (defaultTopicQueueNums).
	DefaultTopicQueueNums int32 = 8
	// PermReadWrite is the perm of an ordinary topic (6).
	PermReadWrite = PermRead | PermWrite
)

// IsReadable reports whether perm allows consumers to read.
func IsReadable(perm int32) bool { return perm&PermRead != 0 }

// IsWritable reports whether perm allows producers to write.
func IsWritable(perm int32) bool { return perm&PermWrite != 0 }

// IsInheritable reports whether new topics may be created from a topic with perm.
func IsInheritable(perm int32) bool { return perm&PermInherit != 0 }

// NewTopicConfig returns an ordinary read-write SINGLE_TAG topic with the
// given number of read and write queues.
func NewTopicConfig(name string, queues int32) TopicConfig {
	return TopicConfig{
		TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues,
		Perm: PermReadWrite, TopicFilterType: FilterSingleTag,
	}
}

// DataVersion versions a configuration table, as in RocketMQ's
// "dataVersion" JSON (also sent in REGISTER_BROKER bodies).
type DataVersion struct {
	// StateVersion is RocketMQ's state version (kept, not interpreted).
	StateVersion int64 `json:"stateVersion"`
	// Timestamp is the time of the last change, ms since the epoch.
	Timestamp int64 `json:"timestamp"`
	// Counter increases by one with every change.
	Counter int64 `json:"counter"`
}

// Next returns the version that follows v at time now.
func (v DataVersion) Next(now time.Time) DataVersion {
	return DataVersion{StateVersion: v.StateVersion, Timestamp: now.UnixMilli(), Counter: v.Counter + 1}
}

// DefaultTopics returns the topics a broker creates at start-up, as a Java
// broker does: SELF_TEST_TOPIC (1 queue, perm 6), a topic named after the
// broker and one after the cluster (1 queue, perm 7), the cluster's reply
// topic <cluster>_REPLY_TOPIC that request/reply responders send to (1
// queue, perm 6), and TBW102 (8 queues, perm 7) when autoCreate is set.
// Empty names are skipped.
func DefaultTopics(brokerName, cluster string, autoCreate bool) map[string]TopicConfig {
	m := map[string]TopicConfig{TopicSelfTest: NewTopicConfig(TopicSelfTest, 1)}
	for _, name := range []string{cluster, brokerName} {
		if name != "" {
			c := NewTopicConfig(name, 1)
			c.Perm = PermInherit | PermReadWrite
			m[name] = c
		}
	}
	if cluster != "" {
		name := ReplyTopic(cluster)
		m[name] = NewTopicConfig(name, 1)
	}
	if autoCreate {
		c := NewTopicConfig(TopicAutoCreate, DefaultTopicQueueNums)
		c.Perm = PermInherit | PermReadWrite
		m[TopicAutoCreate] = c
	}
	return m
}

// topicsFile is the JSON shape of topics.json.
type topicsFile struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion            `json:"dataVersion"`
}

// parseTopics decodes and validates a topics.json document.
func parseTopics(data []byte) (topicsFile, error) {
	var f topicsFile
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return f, fmt.Errorf("not a JSON object")
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, err
	}
	if f.TopicConfigTable == nil {
		f.TopicConfigTable = map[string]TopicConfig{}
	}
	for name, c := range f.TopicConfigTable {
		if c.TopicName == "" {
			c.TopicName = name
		}
		c.Attributes = plainAttributes(c.Attributes)
		f.TopicConfigTable[name] = c
		switch {
		case name == "":
			return f, fmt.Errorf("empty topic name")
		case c.TopicName != name:
			return f, fmt.Errorf("topic %q stored under key %q", c.TopicName, name)
		case c.ReadQueueNums < 0 || c.WriteQueueNums < 0:
			return f, fmt.Errorf("topic %q: negative queue count", name)
		}
	}
	return f, nil
}

// LoadTopics reads a topics.json file written by SaveTopics (or by a Java
// broker), falling back to its .bak file as described in the package doc.
// When neither exists it returns an empty map and a zero DataVersion: merge
// DefaultTopics under the result.
func LoadTopics(fs vfs.FS, path string, opts ...Option) (map[string]TopicConfig, DataVersion, error) {
	o := buildOptions(opts)
	f, _, err := loadWithBackup(fs, path, o.log, parseTopics)
	if err != nil {
		return nil, DataVersion{}, err
	}
	if f.TopicConfigTable == nil {
		f.TopicConfigTable = map[string]TopicConfig{}
	}
	return f.TopicConfigTable, f.DataVersion, nil
}

// SaveTopics writes topics and their version to path as RocketMQ-style JSON,
// keeping the previous file as .bak.
func SaveTopics(fs vfs.FS, path string, topics map[string]TopicConfig, v DataVersion) error {
	if topics == nil {
		topics = map[string]TopicConfig{}
	}
	data, err := json.MarshalIndent(topicsFile{TopicConfigTable: topics, DataVersion: v}, "", "  ")
	if err != nil {
		return fmt.Errorf("meta save %s: %w", path, err)
	}
	return saveWithBackup(fs, path, append(data, '\n'), func(b []byte) bool {
		_, err := parseTopics(b)
		return err == nil
	})
}

// TopicTable is an immutable snapshot of the topic configuration and its
// version. Changes return a new table, so a table can be published through
// an atomic.Pointer and read without locks.
type TopicTable struct {
	topics  map[string]TopicConfig
	version DataVersion
}

// NewTopicTable returns a table holding a copy of topics at version v.
func NewTopicTable(topics map[string]TopicConfig, v DataVersion) *TopicTable {
	m := maps.Clone(topics)
	if m == nil {
		m = map[string]TopicConfig{}
	}
	return &TopicTable{topics: m, version: v}
}

// Get returns the configuration of topic name.
func (t *TopicTable) Get(name string) (TopicConfig, bool) {
	c, ok := t.topics[name]
	return c, ok
}

// Len returns the number of topics.
func (t *TopicTable) Len() int { return len(t.topics) }

// Version returns the table's data version.
func (t *TopicTable) Version() DataVersion { return t.version }

// Names returns the topic names in sorted order.
func (t *TopicTable) Names() []string { return slices.Sorted(maps.Keys(t.topics)) }

// All iterates over the topics in sorted name order.
func (t *TopicTable) All() iter.Seq2[string, TopicConfig] {
	return func(yield func(string, TopicConfig) bool) {
		for _, name := range t.Names() {
			if !yield(name, t.topics[name]) {
				return
			}
		}
	}
}

// Map returns a copy of the topics.
func (t *TopicTable) Map() map[string]TopicConfig { return maps.Clone(t.topics) }

// With returns a new table with cfgs added or replaced (keyed by TopicName)
// and the version advanced to now.
func (t *TopicTable) With(now time.Time, cfgs ...TopicConfig) *TopicTable {
	m := maps.Clone(t.topics)
	for _, c := range cfgs {
		m[c.TopicName] = c
	}
	return &TopicTable{topics: m, version: t.version.Next(now)}
}

// Without returns a new table without the named topics and the version
// advanced to now.
func (t *TopicTable) Without(now time.Time, names ...string) *TopicTable {
	m := maps.Clone(t.topics)
	for _, n := range names {
		delete(m, n)
	}
	return &TopicTable{topics: m, version: t.version.Next(now)}
}

// Save writes the table with SaveTopics.
func (t *TopicTable) Save(fs vfs.FS, path string) error {
	return SaveTopics(fs, path, t.topics, t.version)
}
