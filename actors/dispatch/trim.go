package dispatch

import (
	"github.com/wheelmq/wheelmq/storage/consumequeue"
)

// Trim asks the dispatcher, the only writer of the consume queues, to trim
// every queue below a CommitLog offset (consumequeue.Store.TrimBelow): the
// retention stage sends it before it deletes the CommitLog below that
// offset, so a queue's minimum never points at a deleted message. Below
// must not exceed the dispatched position (the retention stage's pins see
// to it). Reply is called on the dispatcher's goroutine and must not block.
type Trim struct {
	Below int64
	Reply func(consumequeue.StoreTrim, error)
}

// Fail implements stage.Failable.
func (t *Trim) Fail(err error) { t.Reply(consumequeue.StoreTrim{}, err) }

// trim serves a Trim.
func (d *Dispatcher) trim(m *Trim) {
	r, err := d.opts.Store.Queues.TrimBelow(m.Below)
	if err != nil {
		d.opts.Logger.Error().Err(err).Int64("below", m.Below).Msg("consume queue trim failed")
	}
	if r.Queues > 0 {
		d.opts.Logger.Info().Int64("below", m.Below).Int("queues", r.Queues).Int64("units", r.Units).
			Int("files", r.Files).Int64("bytes", r.Bytes).Msg("consume queues trimmed")
	}
	m.Reply(r, err)
}
