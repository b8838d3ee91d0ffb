// Package table is the mechanism the topics and groups stages share. Each of
// them is the single owner of one table of named records (topic
// configurations, subscription groups) kept in a JSON file under config/:
// it loads the file at start (storage/meta's loaders fall back to the .bak
// file), merged over built-in defaults; it applies one change per message
// to a copy of the table; it persists the copy atomically (the previous
// file kept as .bak) before anything else sees it; then it makes the copy
// current, publishes it as an immutable snapshot for the readers that never
// message the stage (copy-on-write), and kicks whoever follows changes. A
// change whose write fails changes nothing.
//
// Table is that state, held by the stage's actor and used only from its
// Receive. The stage packages keep their own messages, stage names, log
// lines and snapshot types; metrics and supervision are the stage's, as for
// every stage.
package table

import (
	"fmt"
	"maps"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Options configures a Table.
type Options[V any] struct {
	// What names the records in errors and log lines ("topics",
	// "subscription groups").
	What string
	// FS is the file system of Path (storage.Store.FS; nil: the real one).
	FS vfs.FS
	// Path is the table's file.
	Path string
	// Load reads the file, falling back to its .bak file (storage/meta's
	// LoadTopics, LoadSubscriptionGroups); a missing file is an empty
	// table.
	Load func(fs vfs.FS, path string, opts ...meta.Option) (map[string]V, meta.DataVersion, error)
	// Save writes the file atomically, keeping the previous one as .bak
	// (storage/meta's SaveTopics, SaveSubscriptionGroups).
	Save func(fs vfs.FS, path string, records map[string]V, v meta.DataVersion) error
	// Defaults are merged under the file's records at every load (a record
	// in the file wins).
	Defaults map[string]V
	// Publish stores a snapshot for the readers. The map is never modified
	// afterwards. It must not block.
	Publish func(records map[string]V, v meta.DataVersion)
	// Changed, when set, is called after each persisted and published
	// change. It must not block.
	Changed func()
	// Logger reports a fallback to the .bak file and failed writes.
	Logger zerolog.Logger
}

// Load reads the table's file merged over the defaults: the broker's
// start-up calls it before the stage runs (to publish the first snapshot),
// and Table.Start on every (re)start of the stage.
func Load[V any](o Options[V]) (map[string]V, meta.DataVersion, error) {
	records, ver, err := o.Load(o.FS, o.Path, meta.WithLogger(o.Logger))
	if err != nil {
		return nil, ver, fmt.Errorf("load %s: %w", o.What, err)
	}
	if records == nil {
		records = make(map[string]V, len(o.Defaults))
	}
	for name, r := range o.Defaults {
		if _, ok := records[name]; !ok {
			records[name] = r
		}
	}
	return records, ver, nil
}

// Table is one stage's table: the current records and their version.
type Table[V any] struct {
	opts    Options[V]
	records map[string]V
	ver     meta.DataVersion
}

// New returns a table that holds nothing until Start.
func New[V any](o Options[V]) *Table[V] { return &Table[V]{opts: o} }

// Start loads the table and publishes it: the stage's Started handler.
func (t *Table[V]) Start() error {
	records, ver, err := Load(t.opts)
	if err != nil {
		return err
	}
	t.records, t.ver = records, ver
	t.opts.Publish(t.records, t.ver)
	return nil
}

// Get returns one record of the current table.
func (t *Table[V]) Get(name string) (V, bool) {
	r, ok := t.records[name]
	return r, ok
}

// Change applies fn to a copy of the table and persists the copy under
// the next version; then the copy becomes the current table, is published
// and Changed is called. On a write failure nothing changes: the error is
// logged and returned.
func (t *Table[V]) Change(fn func(records map[string]V)) error {
	next := maps.Clone(t.records)
	if next == nil {
		next = map[string]V{}
	}
	fn(next)
	ver := t.ver.Next(time.Now())
	if err := t.opts.Save(t.opts.FS, t.opts.Path, next, ver); err != nil {
		t.opts.Logger.Error().Err(err).Str("path", t.opts.Path).Msg("persist " + t.opts.What + " failed")
		return fmt.Errorf("persist %s: %w", t.opts.What, err)
	}
	t.records, t.ver = next, ver
	t.opts.Publish(t.records, t.ver)
	if t.opts.Changed != nil {
		t.opts.Changed()
	}
	return nil
}
