package metalog

import (
	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/pop/mode"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/metarec"
)

// applyBatch is how many units one apply pass reads.
const applyBatch = 1024

// apply reads the system topic's consume queue from the cursor and applies
// every record not written by this instance.
func (l *Log) apply() {
	defer l.publish()
	q := l.opts.Store.Queues.Lookup(metarec.Topic, 0)
	if q == nil {
		return
	}
	if m := q.MinOffset(); l.next < m {
		l.opts.Logger.Warn().Int64("cursor", l.next).Int64("queue_min", m).
			Msg("metadata log: records below the cursor were deleted; the files hold what they said")
		l.next = m
	}
	for l.next < q.MaxOffset() {
		units, err := q.Read(l.next, applyBatch)
		if err != nil {
			l.opts.Logger.Error().Err(err).Int64("offset", l.next).Msg("metadata log: read consume queue failed")
			return
		}
		if len(units) == 0 {
			return
		}
		recs := storage.ReadUnits(l.opts.Store.CommitLog, units)
		for i, rec := range recs {
			if rec == nil {
				l.opts.Logger.Error().Int64("queue_offset", l.next+int64(i)).Int64("commitlog_offset", units[i].Offset).
					Msg("metadata log: record unreadable; skipped")
				continue
			}
			r, err := metarec.FromMessage(rec)
			if err != nil {
				l.opts.Logger.Error().Err(err).Int64("commitlog_offset", units[i].Offset).
					Msg("metadata log: record undecodable; skipped")
				continue
			}
			if r.Origin != l.opts.Origin {
				l.applyRecord(r)
			}
		}
		l.next += int64(len(units))
	}
}

// applyRecord hands one record's changes to the owning stages and updates
// the journal's baseline, so that the change they cause is not journaled
// again.
func (l *Log) applyRecord(r metarec.Record) {
	self := l.self
	done := func(err error) { self.Send(opDone{err: err}) }
	switch r.Kind {
	case metarec.KindOffsets:
		l.opts.SendOffsets(&offsets.Apply{Offsets: r.Offsets})
	case metarec.KindTopicPut:
		for _, c := range r.Topics {
			if meta.ValidateTopic(c.TopicName) != nil || metarec.IsSystemTopic(c.TopicName) {
				continue
			}
			l.topics[c.TopicName] = c
			l.inflight++
			l.opts.SendTopics(&topics.Put{Config: c, Done: done})
		}
	case metarec.KindTopicDelete:
		for _, n := range r.Names {
			delete(l.topics, n)
			l.inflight++
			l.opts.SendTopics(&topics.Delete{Topic: n, Done: done})
			l.opts.SendOffsets(&offsets.DropTopic{Topic: n})
		}
	case metarec.KindGroupPut:
		for _, c := range r.Groups {
			l.groups[c.GroupName] = c
			l.inflight++
			l.opts.SendGroups(&groups.Put{Config: c, Done: done})
		}
	case metarec.KindRequestModePut:
		if l.opts.SendPop == nil {
			return
		}
		for _, m := range r.Modes {
			l.modes[mode.Key{Group: m.ConsumerGroup, Topic: m.Topic}] = m
		}
		l.inflight++
		l.opts.SendPop(&pop.ApplyModes{Modes: r.Modes, Done: done})
	case metarec.KindGroupDelete:
		for _, n := range r.Names {
			delete(l.groups, n)
			l.inflight++
			l.opts.SendGroups(&groups.Delete{Name: n, Done: func(_ bool, err error) { done(err) }})
		}
	case metarec.KindOffsetsDrop:
		for _, n := range r.Names {
			l.opts.SendOffsets(&offsets.DropGroup{Group: n})
		}
	}
}

// publish tells Options.Progress the cursor once every change below it
// was answered.
func (l *Log) publish() {
	if l.inflight <= 0 {
		l.opts.Progress.publish(l.next)
	}
}

// saveCursor persists the cursor once everything below it is in the
// stages' files: the topics and groups stages answered every change (they
// persist before answering) and the offsets stage flushed.
func (l *Log) saveCursor() {
	if l.saving || l.inflight > 0 || l.next == l.saved {
		return
	}
	l.saving = true
	to, self, st := l.next, l.self, l.opts.Store
	l.opts.SendOffsets(&offsets.Flush{Done: func(err error) {
		if err == nil {
			err = meta.UpdateCheckpoint(st.FS, st.CheckpointPath(), CursorKey, to)
		}
		self.Send(cursorFlushed{to: to, err: err})
	}})
}
