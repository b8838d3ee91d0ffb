package pull

import (
	"errors"
	"fmt"
)

// ErrNoMessage answers a ReadQueue for an offset outside its queue.
var ErrNoMessage = errors.New("pull: no message at that queue offset")

// ReadQueue reads the stored record at one queue offset, for a look-up
// that is not a consumer's (the broker's web console): unlike a pull it
// needs no group, counts nothing and remembers nothing. Reply runs on a
// pull reader and must not block.
type ReadQueue struct {
	Pos   QueuePos
	Reply func(record []byte, err error)
}

// Fail implements stage.Failable.
func (m *ReadQueue) Fail(err error) { m.Reply(nil, err) }

func (p *reader) readQueue(m *ReadQueue) {
	pos := m.Pos
	q := p.opts.Store.Queues.Lookup(pos.Topic, pos.QueueID)
	if q == nil || pos.Offset < q.MinOffset() || pos.Offset >= q.MaxOffset() {
		m.Reply(nil, fmt.Errorf("%s queue %d offset %d: %w", pos.Topic, pos.QueueID, pos.Offset, ErrNoMessage))
		return
	}
	units, err := q.Read(pos.Offset, 1)
	if err != nil || len(units) == 0 {
		m.Reply(nil, fmt.Errorf("%s queue %d offset %d: read the consume queue: %w", pos.Topic, pos.QueueID, pos.Offset, errors.Join(err, ErrNoMessage)))
		return
	}
	rec, err := p.opts.Store.CommitLog.ReadAt(units[0].Offset, units[0].Size)
	if err != nil {
		m.Reply(nil, fmt.Errorf("%s queue %d offset %d: read the record: %w", pos.Topic, pos.QueueID, pos.Offset, err))
		return
	}
	m.Reply(rec, nil)
}
