// Package offsets is the consumer-offset stage: the single owner of the
// committed offsets of every (group, topic, queue). Commits arrive from
// UPDATE_CONSUMER_OFFSET and from the commitOffset piggybacked on pulls;
// queries from QUERY_CONSUMER_OFFSET and the admin requests
// (GET_CONSUME_STATS); resets from INVOKE_BROKER_TO_RESET_OFFSET (see
// Reset). The table is persisted atomically
// every FlushInterval when it changed, and when the stage stops, so a crash
// replays at most one interval of commits (consumers see those messages
// again: at-least-once).
package offsets

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage/meta"
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

// DropTopic forgets every offset of a deleted topic.
type DropTopic struct{ Topic string }

type flushTick struct{}

// Options configures the stage.
type Options struct {
	// FS is the file system of Path (storage.Store.FS; nil: the real one).
	FS            vfs.FS
	Path          string
	FlushInterval time.Duration // default 5 s
	// Resets, when set, receives the queues with a pending reset.
	Resets *ResetView
	Logger zerolog.Logger
}

// Store is the actor.
type Store struct {
	opts   Options
	table  meta.OffsetTable
	resets map[resetKey]int64 // reset offsets not yet taken by a pull
	dirty  bool
	timer  *stage.Timer
}

// Producer returns the actor producer.
func Producer(opts Options) stage.Producer {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 5 * time.Second
	}
	return func(self *stage.Stage) actor.Actor { return &Store{opts: opts, timer: self.NewTimer()} }
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
	case *Query:
		off, ok := s.table.Get(m.Topic, m.Group, m.QueueID)
		m.Reply(off, ok)
	case *DropTopic:
		s.table.DropTopic(m.Topic)
		s.dirty = true
	case *DropGroup:
		s.table.DropGroup(m.Group)
		s.dirty = true
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
		_ = s.flush()
	}
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
