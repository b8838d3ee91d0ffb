package offsets

import (
	"maps"
	"sync/atomic"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// GroupOffsets answers a group's committed offsets for Topics (nil: every
// topic the group has offsets for), topic -> queue -> offset; the maps are
// copies.
type GroupOffsets struct {
	Group  string
	Topics []string
	Reply  func(map[string]map[int32]int64)
	stage.FailFunc
}

// TopicGroups answers the groups that have committed offsets for Topic,
// sorted (QUERY_TOPIC_CONSUME_BY_WHO).
type TopicGroups struct {
	Topic string
	Reply func(groups []string)
	stage.FailFunc
}

// GroupTopics answers the topics Group has committed offsets for, sorted
// (QUERY_TOPICS_BY_CONSUMER).
type GroupTopics struct {
	Group string
	Reply func(topics []string)
	stage.FailFunc
}

// CloneGroup copies Src's committed offsets of Topics (nil: every topic Src
// has offsets for) to Dest, replacing Dest's (CLONE_GROUP_OFFSET), skipping
// the topics Keep (nil: none skipped; it runs on the stage and must not
// block) refuses; Done gets the topics copied.
type CloneGroup struct {
	Src, Dest string
	Topics    []string
	Keep      func(topic string) bool
	Done      func(copied []string)
	stage.FailFunc
}

// AllGroupOffsets answers every group's committed offsets, group -> topic
// -> queue -> offset, copies (GET_BROKER_CONSUME_STATS).
type AllGroupOffsets struct {
	Reply func(map[string]map[string]map[int32]int64)
	stage.FailFunc
}

// Reset assigns new offsets to a group's queues of a topic
// (INVOKE_BROKER_TO_RESET_OFFSET, RocketMQ 5's server-side reset): they are
// committed at once, and each queue stays marked until the group's next
// pull of it, which TakeReset answers with OFFSET_MOVED to the new offset.
// Commits of a marked queue are ignored, so that the consumer's periodic
// commit of its old position does not undo the reset; a commit of the
// reset offset itself (the consumer took RESET_CONSUMER_CLIENT_OFFSET)
// clears the mark.
type Reset struct {
	Group   string
	Topic   string
	Offsets map[int32]int64
	Done    func()
	stage.FailFunc
}

// TakeReset clears a queue's reset mark; Reply gets the reset offset and
// ok=true when the queue was marked.
type TakeReset struct {
	Group   string
	Topic   string
	QueueID int32
	Reply   func(offset int64, ok bool)
	stage.FailFunc
}

// DropGroup forgets every offset of a deleted group. Done, when set, is
// called once they are gone (see DropTopic for why a master waits for it).
type DropGroup struct {
	Group string
	Done  func()
}

// resetKey names a marked queue.
type resetKey struct {
	topic, group string
	queueID      int32
}

// ResetView publishes the queues with a pending reset, so that the pull
// path asks the stage only when one is pending; safe from any goroutine.
type ResetView struct {
	p atomic.Pointer[map[resetKey]int64]
}

// Pending reports whether a reset of the queue waits for its next pull.
func (v *ResetView) Pending(group, topic string, queueID int32) bool {
	m := v.p.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[resetKey{topic, group, queueID}]
	return ok
}

func (s *Store) groupOffsets(q *GroupOffsets) {
	topics := q.Topics
	if topics == nil {
		topics = s.table.TopicsOf(q.Group)
	}
	out := make(map[string]map[int32]int64, len(topics))
	for _, t := range topics {
		if qs, ok := s.table[meta.OffsetKey(t, q.Group)]; ok {
			out[t] = maps.Clone(qs)
		} else {
			out[t] = map[int32]int64{}
		}
	}
	q.Reply(out)
}

func (s *Store) cloneGroup(c *CloneGroup) {
	topics := c.Topics
	if topics == nil {
		topics = s.table.TopicsOf(c.Src)
	}
	var copied []string
	for _, t := range topics {
		qs, ok := s.table[meta.OffsetKey(t, c.Src)]
		if !ok || (c.Keep != nil && !c.Keep(t)) {
			continue
		}
		s.table[meta.OffsetKey(t, c.Dest)] = maps.Clone(qs)
		for q := range qs {
			s.noteChange(t, c.Dest, q)
		}
		copied = append(copied, t)
	}
	if len(copied) > 0 {
		s.dirty = true
		s.opts.Logger.Info().Str("from", c.Src).Str("to", c.Dest).Strs("topics", copied).Msg("consumer offsets cloned")
	}
	c.Done(copied)
}

func (s *Store) allGroupOffsets(q *AllGroupOffsets) {
	out := map[string]map[string]map[int32]int64{}
	for key, qs := range s.table {
		topic, group, ok := meta.SplitOffsetKey(key)
		if !ok {
			continue
		}
		if out[group] == nil {
			out[group] = map[string]map[int32]int64{}
		}
		out[group][topic] = maps.Clone(qs)
	}
	q.Reply(out)
}

func (s *Store) reset(r *Reset) {
	for q, off := range r.Offsets {
		if off < 0 {
			continue
		}
		s.table.Set(r.Topic, r.Group, q, off)
		s.resets[resetKey{r.Topic, r.Group, q}] = off
		s.noteChange(r.Topic, r.Group, q)
	}
	s.dirty = true
	s.publishResets()
	s.opts.Logger.Info().Str("group", r.Group).Str("topic", r.Topic).Int("queues", len(r.Offsets)).
		Msg("consumer offsets reset")
	if r.Done != nil {
		r.Done()
	}
}

func (s *Store) takeReset(t *TakeReset) {
	k := resetKey{t.Topic, t.Group, t.QueueID}
	off, ok := s.resets[k]
	if ok {
		delete(s.resets, k)
		s.publishResets()
	}
	t.Reply(off, ok)
}

// publishResets publishes a copy of the pending resets.
func (s *Store) publishResets() {
	if s.opts.Resets == nil {
		return
	}
	m := maps.Clone(s.resets)
	s.opts.Resets.p.Store(&m)
}
