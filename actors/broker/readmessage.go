package broker

import (
	"bytes"
	"errors"

	"github.com/wheelmq/wheelmq/actors/pull"
)

// ReadMessage answers the stored record at one queue offset (SUB on the
// topic), for a look-up that is not a consumer's (the web console's
// dead-letter list and message look-up): no group, nothing counted or
// remembered. NotFound for an offset outside the queue. done runs on a
// pull reader and gets a copy of the record.
func (b *Broker) ReadMessage(c Caller, q QueueRef, offset int64, done func([]byte, *Error)) {
	if err := b.authorize(c, Need{Kind: KindTopic, Name: q.Topic, Perm: Sub}); err != nil {
		done(nil, err)
		return
	}
	st, err := b.stageFor(pull.StageName)
	if err != nil {
		done(nil, err)
		return
	}
	st.Send(&pull.ReadQueue{Pos: pull.QueuePos{Topic: q.Topic, QueueID: q.QueueID, Offset: offset},
		Reply: func(rec []byte, err error) {
			switch {
			case errors.Is(err, pull.ErrNoMessage):
				done(nil, Errorf(NotFound, "%s queue %d has no message at offset %d", q.Topic, q.QueueID, offset))
			case err != nil:
				done(nil, Wrap(Internal, "read "+q.Topic, err))
			default:
				done(bytes.Clone(rec), nil)
			}
		}})
}
