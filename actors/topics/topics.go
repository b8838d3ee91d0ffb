// Package topics is the topic-configuration stage: the single owner of the
// topic table. It creates topics (admin requests, auto-creation through
// TBW102 on send, %RETRY% topics on heartbeat), deletes them, persists the
// table atomically after every change and announces changes so the broker
// re-registers with its name servers.
//
// Readers (the send path, pulls, route registration) never message the
// stage: they read an immutable snapshot published through an atomic
// pointer after each change (copy-on-write).
package topics

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
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
	Done   func(error)
}

// Fail implements stage.Failable.
func (p *Put) Fail(err error) { p.Done(err) }

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
	table map[string]meta.TopicConfig
	ver   meta.DataVersion
}

// Producer returns the actor producer.
func Producer(opts Options) stage.Producer {
	return func(*stage.Stage) actor.Actor { return &Manager{opts: opts} }
}

// Load reads the topic file merged with defaults (used at start-up, before
// the stage runs, and by the stage itself on restart).
func Load(fs vfs.FS, path string, defaults map[string]meta.TopicConfig) (map[string]meta.TopicConfig, meta.DataVersion, error) {
	table, ver, err := meta.LoadTopics(fs, path)
	if err != nil {
		return nil, ver, fmt.Errorf("load topics: %w", err)
	}
	if table == nil {
		table = map[string]meta.TopicConfig{}
	}
	for name, c := range defaults {
		if _, ok := table[name]; !ok {
			table[name] = c
		}
	}
	return table, ver, nil
}

// Receive implements actor.Actor.
func (m *Manager) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		table, ver, err := Load(m.opts.FS, m.opts.Path, m.opts.Defaults)
		if err != nil {
			panic(err)
		}
		m.table, m.ver = table, ver
		m.publish()
	case *Ensure:
		if c, ok := m.table[msg.Config.TopicName]; ok {
			msg.Done(c, nil)
			return
		}
		err := m.change(func(t map[string]meta.TopicConfig) { t[msg.Config.TopicName] = msg.Config })
		if err == nil {
			m.opts.Logger.Info().Str("topic", msg.Config.TopicName).Int32("queues", msg.Config.WriteQueueNums).
				Int32("perm", msg.Config.Perm).Msg("topic created")
		}
		msg.Done(msg.Config, err)
	case *Put:
		err := m.change(func(t map[string]meta.TopicConfig) { t[msg.Config.TopicName] = msg.Config })
		if err == nil {
			m.opts.Logger.Info().Str("topic", msg.Config.TopicName).Int32("read_queues", msg.Config.ReadQueueNums).
				Int32("write_queues", msg.Config.WriteQueueNums).Int32("perm", msg.Config.Perm).Msg("topic updated")
		}
		msg.Done(err)
	case *Delete:
		if _, ok := m.table[msg.Topic]; !ok {
			msg.Done(nil)
			return
		}
		err := m.change(func(t map[string]meta.TopicConfig) { delete(t, msg.Topic) })
		if err == nil {
			m.opts.Logger.Info().Str("topic", msg.Topic).Msg("topic deleted")
		}
		msg.Done(err)
	}
}

// change applies fn to a copy of the table, persists it, then publishes it.
// On a write failure nothing changes.
func (m *Manager) change(fn func(map[string]meta.TopicConfig)) error {
	next := make(map[string]meta.TopicConfig, len(m.table)+1)
	for k, v := range m.table {
		next[k] = v
	}
	fn(next)
	ver := m.ver
	ver.Counter++
	ver.Timestamp = time.Now().UnixMilli()
	if err := meta.SaveTopics(m.opts.FS, m.opts.Path, next, ver); err != nil {
		m.opts.Logger.Error().Err(err).Str("path", m.opts.Path).Msg("persist topics failed")
		return fmt.Errorf("persist topics: %w", err)
	}
	m.table, m.ver = next, ver
	m.publish()
	if m.opts.Changed != nil {
		m.opts.Changed()
	}
	return nil
}

func (m *Manager) publish() {
	m.opts.View.p.Store(&Table{Topics: m.table, Version: m.ver})
}
