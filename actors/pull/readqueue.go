package pull

import (
	"errors"
	"fmt"

	"github.com/wheelmq/wheelmq/storage"
)

// ErrNoMessage answers a ReadQueue for an offset outside its queue.
var ErrNoMessage = errors.New("pull: no message at that queue offset")

// ErrUnreadable answers a ReadQueue whose record cannot be read (a hole,
// a damaged message or unit, an I/O error); the error says which.
var ErrUnreadable = errors.New("pull: the message at that queue offset cannot be read")

// ReadQueue reads the stored record at one queue offset, for a look-up
// that is not a consumer's (the broker's web console): unlike a pull it
// needs no group, counts nothing and remembers nothing. A record it cannot
// read is judged by Unreadable, as a pull judges it. Reply runs on a pull
// reader and must not block.
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
	recs, states := storage.ReadUnitsChecked(p.opts.Store.CommitLog, units[:1])
	if recs[0] == nil {
		// The one reading rule of every queue reader (Unreadable): a
		// damaged message is reported (and, under on-corruption=skip, passed
		// over by consumers); a damaged unit sends the queue to be rebuilt.
		remark := "a hole: its message was lost to CommitLog damage"
		if !units[0].IsHole() {
			if remark = p.unreadable(q.ID(), pos.Offset, units[0], states[0]); remark == "" {
				remark = "its message is damaged and skipped by consumers (on-corruption=skip)"
			}
		}
		m.Reply(nil, fmt.Errorf("%s queue %d offset %d: %s: %w", pos.Topic, pos.QueueID, pos.Offset, remark, ErrUnreadable))
		return
	}
	m.Reply(recs[0], nil)
}
