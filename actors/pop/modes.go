package pop

import (
	"errors"
	"fmt"

	"github.com/wheelmq/wheelmq/actors/pop/mode"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// The consumption model of each (group, topic) (package mode): the engine
// is the writer of its table. The modes set by SET_MESSAGE_REQUEST_MODE
// are kept in config/messageRequestMode.json and journaled as metadata
// records by the metalog stage (Options.ModesChanged); the deliveries in
// flight are the engine's own state (the journal's), counted per (group,
// topic) as they are popped, acked, changed and expired.

// SetMode sets the consumption model of (Mode.ConsumerGroup, Mode.Topic)
// (SET_MESSAGE_REQUEST_MODE, checked by the broker API). Done gets nil once
// the mode is persisted and published.
type SetMode struct {
	Mode meta.RequestMode
	Done func(error)
}

// Fail implements stage.Failable.
func (m *SetMode) Fail(err error) { m.Done(err) }

// ApplyModes applies modes replicated from the master (the metalog stage):
// persisted and published like SetMode's, on any role.
type ApplyModes struct {
	Modes []meta.RequestMode
	Done  func(error)
}

// Fail implements stage.Failable.
func (m *ApplyModes) Fail(err error) { m.Done(err) }

// ErrNotMaster refuses a SetMode on a replica: modes are set on the
// group's master and reach replicas as metadata records.
var ErrNotMaster = errors.New("pop: request modes are set on the master")

// Modes is the table the engine publishes (read it from any goroutine).
func (e *Engine) Modes() *mode.Table { return e.modes }

// IsMaster reports whether this broker takes SET_MESSAGE_REQUEST_MODE:
// it is its group's master, or standalone (safe from any goroutine).
func (e *Engine) IsMaster() bool { return e.opts.Master == nil || e.opts.Master() }

// loadModes reads the persisted modes into the table.
func (e *Engine) loadModes() {
	if e.opts.Store == nil {
		return
	}
	modes, err := meta.LoadRequestModes(e.opts.Store.FS, e.opts.Store.RequestModesPath(), meta.WithLogger(e.opts.Logger))
	if err != nil {
		e.opts.Logger.Error().Err(err).Msg("pop: request modes unreadable; none is set until one is (pull/POP exclusion still holds by deliveries in flight)")
		return
	}
	e.modes.SetModes(modes)
}

// putModes merges puts into the table, persists it and publishes it.
func (e *Engine) putModes(puts []meta.RequestMode) error {
	cur := e.modes.Modes()
	next := make(map[mode.Key]meta.RequestMode, len(cur)+len(puts))
	for k, v := range cur {
		next[k] = v
	}
	changed := false
	for _, m := range puts {
		k := mode.Key{Group: m.ConsumerGroup, Topic: m.Topic}
		if old, ok := next[k]; !ok || old != m {
			changed = true
		}
		next[k] = m
	}
	if !changed {
		return nil
	}
	all := make([]meta.RequestMode, 0, len(next))
	for _, v := range next {
		all = append(all, v)
	}
	meta.SortRequestModes(all)
	if e.opts.Store != nil {
		if err := meta.SaveRequestModes(e.opts.Store.FS, e.opts.Store.RequestModesPath(), all); err != nil {
			return fmt.Errorf("pop: persist request modes: %w", err)
		}
	}
	e.modes.SetModes(all)
	if e.opts.ModesChanged != nil {
		e.opts.ModesChanged()
	}
	return nil
}

// setMode serves SetMode.
func (e *Engine) setMode(m *SetMode) {
	if e.opts.Master != nil && !e.opts.Master() {
		m.Done(fmt.Errorf("%w: %w", ErrNotMaster, writer.ErrNotMaster))
		return
	}
	if err := e.putModes([]meta.RequestMode{m.Mode}); err != nil {
		m.Done(err)
		return
	}
	e.opts.Logger.Info().Str("group", m.Mode.ConsumerGroup).Str("topic", m.Mode.Topic).Str("mode", m.Mode.Mode).
		Msg("message request mode set")
	m.Done(nil)
}

// noteRecovery tells the table whether the engine still rebuilds its
// state: the journal is not read, or queues it has entries of have no
// state yet (their committed offsets are being asked for).
func (e *Engine) noteRecovery() {
	on := !e.replayOK
	if !on {
		for k := range e.replayed {
			if _, ok := e.queues[k]; !ok {
				on = true
				break
			}
		}
	}
	if e.modes.Recovering() != on {
		e.modes.SetRecovering(on)
		e.opts.Logger.Debug().Bool("recovering", on).Msg("pop: pull/POP exclusion state")
	}
}

// mayHaveJournal reports whether a start must wait for the journal's
// replay before pulls are served: the journal has entries, or the
// CommitLog holds records not yet indexed (a journal among them).
func (e *Engine) mayHaveJournal() bool {
	st := e.opts.Store
	if st == nil {
		return false
	}
	if q := st.Queues.Lookup(JournalTopic, 0); q != nil && q.MaxOffset() > 0 {
		return true
	}
	return st.Dispatched.Load() < e.startEnd
}
