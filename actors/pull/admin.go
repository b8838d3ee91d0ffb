package pull

import (
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage/message"
)

// QueuePos names one message of a queue by its queue offset.
type QueuePos struct {
	Topic   string
	QueueID int32
	Offset  int64
}

// QueueProgress is what StoreTimes finds for one QueuePos.
type QueueProgress struct {
	// StoreTime is the store timestamp (ms) of the message at the offset,
	// -1 when the queue holds no such message.
	StoreTime int64
	// Pulled is the next offset Group pulls from the queue (the
	// nextBeginOffset of its last pull answered with messages), -1 when
	// unknown or no group was given.
	Pulled int64
}

// StoreTimes reads the store timestamps of the messages at Positions (the
// admin requests' lastTimestamp figures) and, when Group is set, where the
// group pulls next in each queue. Reply runs on a pull reader.
type StoreTimes struct {
	Group     string
	Positions []QueuePos
	Reply     func([]QueueProgress)
	stage.FailFunc
}

// SearchQueues finds, for each queue of Topic, the offset of the first
// message stored at or after Timestamp (SEARCH_OFFSET_BY_TIMESTAMP for
// several queues at once); Timestamp < 0 means each queue's max offset.
type SearchQueues struct {
	Topic     string
	Queues    []int32
	Timestamp int64
	Reply     func(map[int32]int64)
	stage.FailFunc
}

// pulledKey names one group's position in one queue.
type pulledKey struct {
	group, topic string
	queueID      int32
}

func (p *reader) storeTimes(m *StoreTimes) {
	out := make([]QueueProgress, len(m.Positions))
	for i, pos := range m.Positions {
		out[i] = QueueProgress{StoreTime: p.storeTime(pos), Pulled: -1}
		if m.Group != "" {
			if next, ok := p.svc.pulledAt(pulledKey{m.Group, pos.Topic, pos.QueueID}); ok {
				out[i].Pulled = next
			}
		}
	}
	m.Reply(out)
}

// storeTime reads the store time of the message at pos, -1 when there is
// none (out of the queue's range, or unreadable).
func (p *reader) storeTime(pos QueuePos) int64 {
	q := p.opts.Store.Queues.Lookup(pos.Topic, pos.QueueID)
	if q == nil || pos.Offset < q.MinOffset() || pos.Offset >= q.MaxOffset() {
		return -1
	}
	units, err := q.Read(pos.Offset, 1)
	if err != nil || len(units) == 0 {
		return -1
	}
	rec, err := p.opts.Store.CommitLog.ReadAt(units[0].Offset, units[0].Size)
	if err != nil {
		p.opts.Logger.Warn().Err(err).Str("topic", pos.Topic).Int32("queue", pos.QueueID).Int64("offset", pos.Offset).
			Msg("read store time failed")
		return -1
	}
	return message.PeekStoreTimestamp(rec)
}

func (p *reader) searchQueues(m *SearchQueues) {
	out := make(map[int32]int64, len(m.Queues))
	for _, id := range m.Queues {
		if m.Timestamp < 0 {
			if q := p.opts.Store.Queues.Lookup(m.Topic, id); q != nil {
				out[id] = q.MaxOffset()
			} else {
				out[id] = 0
			}
			continue
		}
		out[id] = p.searchByTime(&SearchByTime{Topic: m.Topic, QueueID: id, Timestamp: m.Timestamp})
	}
	m.Reply(out)
}
