// Package offsets is the consumer-offset stage: the single owner of the
// committed offsets of every (group, topic, queue). Commits arrive from
// UPDATE_CONSUMER_OFFSET and from the commitOffset piggybacked on pulls;
// queries from QUERY_CONSUMER_OFFSET and the admin requests
// (GET_CONSUME_STATS); resets from INVOKE_BROKER_TO_RESET_OFFSET (see
// Reset). The table is persisted atomically
// every FlushInterval when it changed, and when the stage stops, so a crash
// replays at most one interval of commits (consumers see those messages
// again: at-least-once).
//
// Journal: with Options.Journal set, the committed offsets that changed are
// handed over at most every JournalInterval (and at once when JournalBurst
// of them piled up), for the metadata log (package metalog) to append to
// the CommitLog, so that they replicate with it. Apply sets offsets read
// back from that log without journaling them again.
package offsets

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/metarec"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// StageName is the stage's stable name.
const StageName = "offsets"

// Commit stores a consumer group's next offset to consume for one queue.
type Commit struct {
	Group   string
	Topic   string
	QueueID int32
	Offset  int64
}

// Query asks for a committed offset; Reply gets ok=false when none exists.
type Query struct {
	Group   string
	Topic   string
	QueueID int32
	Reply   func(offset int64, ok bool)
	stage.FailFunc
}

// Flush persists the table now and calls Done with the outcome.
type Flush struct{ Done func(error) }

// Fail implements stage.Failable.
func (f *Flush) Fail(err error) { f.Done(err) }

// DropTopic forgets every offset of a deleted topic. Done, when set, is
// called once they are gone: a master deletes the topic's configuration
// only then, so that no journal record of the topic's offsets can follow
// the topic's delete record in the log (a replica applying the log in
// order would keep them).
type DropTopic struct {
	Topic string
	Done  func()
}

type flushTick struct{}
type journalTick struct{}

// Apply sets offsets read back from the metadata log (a replica rebuilding
// its state, a node started on a copied CommitLog). They are not journaled
// again and pending resets are left alone.
type Apply struct{ Offsets []metarec.Offset }

// Snapshot asks for every committed offset (a full snapshot for the
// metadata log); Reply is called on the stage's goroutine.
type Snapshot struct {
	Reply func([]metarec.Offset)
	stage.FailFunc
}

// Options configures the stage.
type Options struct {
	// FS is the file system of Path (storage.Store.FS; nil: the real one).
	FS            vfs.FS
	Path          string
	FlushInterval time.Duration // default 5 s
	// Resets, when set, receives the queues with a pending reset.
	Resets *ResetView
	// Journal, when set, receives the offsets that changed (see the
	// package doc); it is called on the stage's goroutine and must not
	// block.
	Journal func([]metarec.Offset)
	// Dropped, when set, receives each group whose offsets DropGroup
	// forgot, after the Journal calls before it (the metadata log journals
	// the drop: a group delete alone keeps them).
	Dropped func(group string)
	// JournalInterval is the longest a change waits for Journal (default
	// 1 s); JournalBurst is how many changed offsets make it go at once
	// (default 1024).
	JournalInterval time.Duration
	JournalBurst    int
	Logger          zerolog.Logger
}

// Store is the actor.
type Store struct {
	opts   Options
	table  meta.OffsetTable
	resets map[resetKey]int64 // reset offsets not yet taken by a pull
	dirty  bool
	timer  *stage.Timer
	// changed are the offsets set since the last Journal call.
	changed map[changeKey]struct{}
	jtimer  *stage.Timer
}

type changeKey struct {
	topic, group string
	queueID      int32
}

// Producer returns the actor producer.
func Producer(opts Options) stage.Producer {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 5 * time.Second
	}
	if opts.JournalInterval <= 0 {
		opts.JournalInterval = time.Second
	}
	if opts.JournalBurst <= 0 {
		opts.JournalBurst = 1024
	}
	return func(self *stage.Stage) actor.Actor {
		return &Store{opts: opts, timer: self.NewTimer(), jtimer: self.NewTimer(), changed: map[changeKey]struct{}{}}
	}
}

// Receive implements actor.Actor.
func (s *Store) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		t, err := meta.LoadOffsets(s.opts.FS, s.opts.Path)
		if err != nil {
			panic(err)
		}
		s.table = t
		s.resets = map[resetKey]int64{}
		s.publishResets()
		s.arm()
	case *Commit:
		if m.Offset < 0 {
			return
		}
		k := resetKey{m.Topic, m.Group, m.QueueID}
		if off, pending := s.resets[k]; pending {
			if m.Offset != off {
				return // the consumer has not seen the reset yet
			}
			delete(s.resets, k) // it has: it commits the reset offset
			s.publishResets()
		}
		s.table.Set(m.Topic, m.Group, m.QueueID, m.Offset)
		s.dirty = true
		s.noteChange(m.Topic, m.Group, m.QueueID)
	case *Apply:
		for _, o := range m.Offsets {
			s.table.Set(o.Topic, o.Group, o.QueueID, o.Offset)
		}
		s.dirty = s.dirty || len(m.Offsets) > 0
	case *Snapshot:
		m.Reply(s.all())
	case journalTick:
		s.journal()
	case *Query:
		off, ok := s.table.Get(m.Topic, m.Group, m.QueueID)
		m.Reply(off, ok)
	case *DropTopic:
		s.table.DropTopic(m.Topic)
		s.dirty = true
		if m.Done != nil {
			m.Done()
		}
	case *DropGroup:
		s.table.DropGroup(m.Group)
		s.dirty = true
		if s.opts.Dropped != nil {
			s.opts.Dropped(m.Group)
		}
		if m.Done != nil {
			m.Done()
		}
	case *GroupOffsets:
		s.groupOffsets(m)
	case *TopicGroups:
		m.Reply(s.table.GroupsOf(m.Topic))
	case *GroupTopics:
		m.Reply(s.table.TopicsOf(m.Group))
	case *CloneGroup:
		s.cloneGroup(m)
	case *AllGroupOffsets:
		s.allGroupOffsets(m)
	case *Reset:
		s.reset(m)
	case *TakeReset:
		s.takeReset(m)
	case *Flush:
		m.Done(s.flush())
	case flushTick:
		_ = s.flush()
		s.arm()
	case *actor.Stopping, *actor.Restarting:
		s.timer.Stop()
		s.jtimer.Stop()
		s.journal()
		_ = s.flush()
	}
}

// noteChange remembers a changed offset for the journal.
func (s *Store) noteChange(topic, group string, queueID int32) {
	if s.opts.Journal == nil {
		return
	}
	if len(s.changed) == 0 {
		s.jtimer.Arm(s.opts.JournalInterval, journalTick{})
	}
	s.changed[changeKey{topic, group, queueID}] = struct{}{}
	if len(s.changed) >= s.opts.JournalBurst {
		s.jtimer.Stop()
		s.journal()
	}
}

// journal hands the changed offsets (their current values) to Journal.
func (s *Store) journal() {
	if s.opts.Journal == nil || len(s.changed) == 0 {
		return
	}
	out := make([]metarec.Offset, 0, len(s.changed))
	for k := range s.changed {
		if off, ok := s.table.Get(k.topic, k.group, k.queueID); ok { // a dropped topic or group has none
			out = append(out, metarec.Offset{Topic: k.topic, Group: k.group, QueueID: k.queueID, Offset: off})
		}
	}
	clear(s.changed)
	if len(out) > 0 {
		s.opts.Journal(out)
	}
}

// all returns every committed offset.
func (s *Store) all() []metarec.Offset {
	var out []metarec.Offset
	for key, queues := range s.table {
		topic, group, ok := meta.SplitOffsetKey(key)
		if !ok {
			continue
		}
		for q, off := range queues {
			out = append(out, metarec.Offset{Topic: topic, Group: group, QueueID: q, Offset: off})
		}
	}
	return out
}

func (s *Store) arm() {
	s.timer.Arm(s.opts.FlushInterval, flushTick{})
}

func (s *Store) flush() error {
	if !s.dirty {
		return nil
	}
	if err := meta.SaveOffsets(s.opts.FS, s.opts.Path, s.table); err != nil {
		s.opts.Logger.Error().Err(err).Str("path", s.opts.Path).Msg("persist consumer offsets failed")
		return err
	}
	s.dirty = false
	return nil
}
