// Package groups is the subscription-group stage: the single owner of the
// consumer groups' configuration (RocketMQ's SubscriptionGroupManager). It
// creates groups (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, and automatically on
// the first heartbeat, pull or send-back of an unknown group when
// auto-creation is on), deletes them, and persists the table to
// config/subscriptionGroup.json (atomic write, .bak) after every change.
// The load/change/persist/publish mechanism is package table's, shared
// with the topics stage.
//
// Readers (heartbeats, pulls, send-backs, GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
// never message the stage: they read an immutable snapshot published
// through an atomic pointer after each change (copy-on-write).
package groups

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/table"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// StageName is the stage's stable name.
const StageName = "groups"

// Table is an immutable snapshot of the subscription groups.
type Table struct {
	Groups  map[string]meta.SubscriptionGroupConfig
	Version meta.DataVersion
}

// View publishes the current snapshot; safe from any goroutine.
type View struct{ p atomic.Pointer[Table] }

// Load returns the current snapshot (never nil).
func (v *View) Load() *Table {
	if t := v.p.Load(); t != nil {
		return t
	}
	return &Table{Groups: map[string]meta.SubscriptionGroupConfig{}}
}

// Init publishes the table loaded at start-up, before the stage runs, so
// that the first requests never see an empty table. Only the broker's
// start-up calls it; afterwards the stage is the only writer.
func (v *View) Init(groups map[string]meta.SubscriptionGroupConfig, ver meta.DataVersion) {
	v.p.Store(&Table{Groups: groups, Version: ver})
}

// Get returns one group's configuration. The result shares its maps and
// slices with the snapshot: do not modify it (Clone first).
func (v *View) Get(name string) (meta.SubscriptionGroupConfig, bool) {
	c, ok := v.Load().Groups[name]
	return c, ok
}

// Ensure creates each named group with RocketMQ's defaults unless it exists
// (auto-creation), in one persisted change, and calls Done with the outcome.
type Ensure struct {
	Names []string
	Done  func(error)
}

// Fail implements stage.Failable.
func (e *Ensure) Fail(err error) { e.done(err) }

func (e *Ensure) done(err error) {
	if e.Done != nil {
		e.Done(err)
	}
}

// Put creates or replaces a group (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP).
type Put struct {
	Config meta.SubscriptionGroupConfig
	Done   func(error)
}

// Fail implements stage.Failable.
func (p *Put) Fail(err error) { p.Done(err) }

// PutMany creates or replaces several groups in one change of the table
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST): all of them or none.
type PutMany struct {
	Configs []meta.SubscriptionGroupConfig
	Done    func(error)
}

// Fail implements stage.Failable.
func (p *PutMany) Fail(err error) { p.Done(err) }

// Delete removes a group (DELETE_SUBSCRIPTIONGROUP); existed reports
// whether it was there.
type Delete struct {
	Name string
	Done func(existed bool, err error)
}

// Fail implements stage.Failable.
func (d *Delete) Fail(err error) { d.Done(false, err) }

// Options configures the stage.
type Options struct {
	// FS is the file system of Path (storage.Store.FS; nil: the real one).
	FS   vfs.FS
	Path string
	// Defaults are merged under the file's groups (the built-in groups).
	Defaults map[string]meta.SubscriptionGroupConfig
	View     *View
	// Changed is called after each persisted change (non-blocking), e.g.
	// to journal it in the metadata log (package metalog).
	Changed func()
	Logger  zerolog.Logger
}

// Manager is the actor.
type Manager struct {
	opts  Options
	table *table.Table[meta.SubscriptionGroupConfig]
}

// Producer returns the actor producer.
func Producer(opts Options) stage.Producer {
	return func(*stage.Stage) actor.Actor { return &Manager{opts: opts, table: table.New(tableOptions(opts))} }
}

// tableOptions describes the group table to package table.
func tableOptions(o Options) table.Options[meta.SubscriptionGroupConfig] {
	t := table.Options[meta.SubscriptionGroupConfig]{What: "subscription groups", FS: o.FS, Path: o.Path,
		Load: meta.LoadSubscriptionGroups, Save: meta.SaveSubscriptionGroups, Defaults: o.Defaults, Changed: o.Changed, Logger: o.Logger}
	if v := o.View; v != nil {
		t.Publish = func(groups map[string]meta.SubscriptionGroupConfig, ver meta.DataVersion) {
			v.p.Store(&Table{Groups: groups, Version: ver})
		}
	}
	return t
}

// Load reads the group file (or its .bak, which log reports) merged with
// defaults: used at start-up, before the stage runs, and by the stage
// itself on every (re)start.
func Load(fs vfs.FS, path string, defaults map[string]meta.SubscriptionGroupConfig, log zerolog.Logger) (
	map[string]meta.SubscriptionGroupConfig, meta.DataVersion, error) {
	return table.Load(tableOptions(Options{FS: fs, Path: path, Defaults: defaults, Logger: log}))
}

// Receive implements actor.Actor.
func (m *Manager) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		if err := m.table.Start(); err != nil {
			panic(err)
		}
	case *Ensure:
		var missing []string
		for _, name := range msg.Names {
			if _, ok := m.table.Get(name); !ok && meta.ValidateGroup(name) == nil {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			msg.done(nil)
			return
		}
		err := m.table.Change(func(t map[string]meta.SubscriptionGroupConfig) {
			for _, name := range missing {
				t[name] = meta.NewSubscriptionGroupConfig(name)
			}
		})
		if err == nil {
			m.opts.Logger.Info().Strs("groups", missing).Msg("subscription groups created")
		}
		msg.done(err)
	case *PutMany:
		err := m.table.Change(func(t map[string]meta.SubscriptionGroupConfig) {
			for _, c := range msg.Configs {
				t[c.GroupName] = c
			}
		})
		if err == nil {
			m.opts.Logger.Info().Int("groups", len(msg.Configs)).Msg("subscription groups updated")
		}
		msg.Done(err)
	case *Put:
		err := m.table.Change(func(t map[string]meta.SubscriptionGroupConfig) { t[msg.Config.GroupName] = msg.Config })
		if err == nil {
			c := msg.Config
			m.opts.Logger.Info().Str("group", c.GroupName).Bool("consume_enable", c.ConsumeEnable).
				Int32("retry_max_times", c.RetryMaxTimes).Int32("retry_queues", c.RetryQueueNums).
				Msg("subscription group updated")
		}
		msg.Done(err)
	case *Delete:
		if _, ok := m.table.Get(msg.Name); !ok {
			msg.Done(false, nil)
			return
		}
		err := m.table.Change(func(t map[string]meta.SubscriptionGroupConfig) { delete(t, msg.Name) })
		if err == nil {
			m.opts.Logger.Info().Str("group", msg.Name).Msg("subscription group deleted")
		}
		msg.Done(err == nil, err)
	}
}
