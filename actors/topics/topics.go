// Package topics is the topic-configuration stage: the single owner of the
// topic table. It creates topics (admin requests, auto-creation through
// TBW102 on send, %RETRY% topics on heartbeat), deletes them, persists the
// table atomically after every change and announces changes so the broker
// re-registers with its name servers. The load/change/persist/publish
// mechanism is package table's, shared with the groups stage.
//
// Readers (the send path, pulls, route registration) never message the
// stage: they read an immutable snapshot published through an atomic
// pointer after each change (copy-on-write).
package topics

import (
	"fmt"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/table"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// StageName is the stage's stable name.
const StageName = "topics"

// Table is an immutable snapshot of the topic configuration.
type Table struct {
	Topics  map[string]meta.TopicConfig
	Version meta.DataVersion
}

// View publishes the current snapshot; safe from any goroutine.
type View struct{ p atomic.Pointer[Table] }

// Load returns the current snapshot (never nil once the stage started).
func (v *View) Load() *Table {
	if t := v.p.Load(); t != nil {
		return t
	}
	return &Table{Topics: map[string]meta.TopicConfig{}}
}

// Init publishes the table loaded at start-up, before the stage runs, so
// that readers (the first registration, the first sends) never see an empty
// table while the stage is still starting. Only the broker's start-up calls
// it; afterwards the stage is the only writer.
func (v *View) Init(topics map[string]meta.TopicConfig, ver meta.DataVersion) {
	v.p.Store(&Table{Topics: topics, Version: ver})
}

// Get returns one topic's configuration.
func (v *View) Get(name string) (meta.TopicConfig, bool) {
	c, ok := v.Load().Topics[name]
	return c, ok
}

// Ensure creates Config.TopicName when it does not exist yet (used for
// auto-creation and retry topics) and calls Done with the topic's config.
type Ensure struct {
	Config meta.TopicConfig
	Done   func(meta.TopicConfig, error)
}

// Fail implements stage.Failable.
func (e *Ensure) Fail(err error) { e.Done(meta.TopicConfig{}, err) }

// Put creates or replaces a topic (UPDATE_AND_CREATE_TOPIC).
type Put struct {
	Config meta.TopicConfig
	// Attributes, when not nil, is a parsed attribute modification list
	// (meta.ParseAttributes: "+key" / "-key"), applied to the topic's
	// current attributes (meta.AlterAttributes) in place of
	// Config.Attributes; Done gets an error wrapping meta.ErrAttribute
	// when it is refused. Nil: Config is stored as it is (replication).
	Attributes map[string]string
	Done       func(error)
}

// Fail implements stage.Failable.
func (p *Put) Fail(err error) { p.Done(err) }

// PutMany creates or replaces several topics in one change of the table
// (UPDATE_AND_CREATE_TOPIC_LIST): all of them or none.
type PutMany struct {
	Configs []meta.TopicConfig
	// Attributes maps a topic to its attribute modification list, as
	// Put.Attributes (topics not named keep their current attributes).
	Attributes map[string]map[string]string
	Done       func(error)
}

// Fail implements stage.Failable.
func (p *PutMany) Fail(err error) { p.Done(err) }

// Delete removes a topic (DELETE_TOPIC_IN_BROKER).
type Delete struct {
	Topic string
	Done  func(error)
}

// Fail implements stage.Failable.
func (d *Delete) Fail(err error) { d.Done(err) }

// Options configures the stage.
type Options struct {
	// FS is the file system of Path (storage.Store.FS; nil: the real one).
	FS       vfs.FS
	Path     string
	Defaults map[string]meta.TopicConfig
	View     *View
	// Changed is called after each persisted change (non-blocking).
	Changed func()
	Logger  zerolog.Logger
}

// Manager is the actor.
type Manager struct {
	opts  Options
	table *table.Table[meta.TopicConfig]
}

// Producer returns the actor producer.
func Producer(opts Options) stage.Producer {
	return func(*stage.Stage) actor.Actor { return &Manager{opts: opts, table: table.New(tableOptions(opts))} }
}

// tableOptions describes the topic table to package table.
func tableOptions(o Options) table.Options[meta.TopicConfig] {
	t := table.Options[meta.TopicConfig]{What: "topics", FS: o.FS, Path: o.Path, Load: meta.LoadTopics, Save: meta.SaveTopics,
		Defaults: o.Defaults, Changed: o.Changed, Logger: o.Logger}
	if v := o.View; v != nil {
		t.Publish = func(topics map[string]meta.TopicConfig, ver meta.DataVersion) {
			v.p.Store(&Table{Topics: topics, Version: ver})
		}
	}
	return t
}

// Load reads the topic file (or its .bak, which log reports) merged with
// defaults: used at start-up, before the stage runs, and by the stage
// itself on every (re)start.
func Load(fs vfs.FS, path string, defaults map[string]meta.TopicConfig, log zerolog.Logger) (
	map[string]meta.TopicConfig, meta.DataVersion, error) {
	return table.Load(tableOptions(Options{FS: fs, Path: path, Defaults: defaults, Logger: log}))
}

// alter gives c its attributes: mods applied to the stored topic's
// attributes when apply is set (a new topic: creation rules), else c's own.
func (m *Manager) alter(c meta.TopicConfig, mods map[string]string, apply bool) (meta.TopicConfig, error) {
	if !apply {
		return c, nil
	}
	old, exists := m.table.Get(c.TopicName)
	attrs, err := meta.AlterAttributes(!exists, old.Attributes, mods)
	if err != nil {
		return c, fmt.Errorf("topic %s attributes: %w", c.TopicName, err)
	}
	c.Attributes = attrs
	return c, nil
}

// Receive implements actor.Actor.
func (m *Manager) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		if err := m.table.Start(); err != nil {
			panic(err)
		}
	case *Ensure:
		if c, ok := m.table.Get(msg.Config.TopicName); ok {
			msg.Done(c, nil)
			return
		}
		err := m.table.Change(func(t map[string]meta.TopicConfig) { t[msg.Config.TopicName] = msg.Config })
		if err == nil {
			m.opts.Logger.Info().Str("topic", msg.Config.TopicName).Int32("queues", msg.Config.WriteQueueNums).
				Int32("perm", msg.Config.Perm).Msg("topic created")
		}
		msg.Done(msg.Config, err)
	case *PutMany:
		cfgs := make([]meta.TopicConfig, 0, len(msg.Configs))
		for _, c := range msg.Configs {
			c, err := m.alter(c, msg.Attributes[c.TopicName], true)
			if err != nil {
				msg.Done(err)
				return
			}
			cfgs = append(cfgs, c)
		}
		err := m.table.Change(func(t map[string]meta.TopicConfig) {
			for _, c := range cfgs {
				t[c.TopicName] = c
			}
		})
		if err == nil {
			m.opts.Logger.Info().Int("topics", len(msg.Configs)).Msg("topics updated")
		}
		msg.Done(err)
	case *Put:
		c, err := m.alter(msg.Config, msg.Attributes, msg.Attributes != nil)
		if err != nil {
			m.opts.Logger.Warn().Err(err).Str("topic", c.TopicName).Msg("topic update refused")
			msg.Done(err)
			return
		}
		err = m.table.Change(func(t map[string]meta.TopicConfig) { t[c.TopicName] = c })
		if err == nil {
			m.opts.Logger.Info().Str("topic", c.TopicName).Int32("read_queues", c.ReadQueueNums).
				Int32("write_queues", c.WriteQueueNums).Int32("perm", c.Perm).
				Str("attributes", meta.FormatAttributes(c.Attributes)).Msg("topic updated")
		}
		msg.Done(err)
	case *Delete:
		if _, ok := m.table.Get(msg.Topic); !ok {
			msg.Done(nil)
			return
		}
		err := m.table.Change(func(t map[string]meta.TopicConfig) { delete(t, msg.Topic) })
		if err == nil {
			m.opts.Logger.Info().Str("topic", msg.Topic).Msg("topic deleted")
		}
		msg.Done(err)
	}
}
