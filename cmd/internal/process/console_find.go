package process

// The console's message look-up, through the broker API's queries
// (actors/broker/query.go): by offset message id (ViewMessage), by
// message id or key (QueryMessages, with the topic's timer copies)
// or by queue offset (ReadQueue, the pull path's reader), then each
// message's life from the same calls and the group administration's.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/storage/message"
)

// queryMax is how many records one look-up asks the index for.
const queryMax = 32

// FindMessages finds by offset message id, message id or key (on the
// topic and the timer topic) or queue offset, then works out each one's
// life.
func (cb *consoleBackend) FindMessages(ctx context.Context, c console.Credentials, q console.MessageQuery) ([]console.Message, error) {
	core, err := cb.core()
	if err != nil {
		return nil, err
	}
	f := finder{ctx: ctx, core: core, caller: cb.caller(c), addr: cb.n.broker.Advertise()}
	var recs []message.Record
	switch {
	case q.ByOffset:
		var m *broker.StoredMessage
		m, err = await(ctx, func(done func(*broker.StoredMessage, *broker.Error)) {
			core.ReadQueue(f.caller, broker.QueueRef{Topic: q.Topic, QueueID: int32(q.Queue)}, q.Offset, done)
		})
		if err == nil {
			recs = append(recs, m.Record)
		}
	case q.ID != "":
		if _, off, perr := message.ParseOffsetMsgID(q.ID); perr == nil {
			var m *broker.StoredMessage
			if m, err = await(ctx, func(done func(*broker.StoredMessage, *broker.Error)) { core.ViewMessage(f.caller, off, done) }); err == nil {
				recs = append(recs, m.Record)
			}
		}
		if len(recs) == 0 && q.Topic != "" {
			recs, err = f.queryBoth(broker.MessageQuery{Topic: q.Topic, Key: q.ID, Unique: true})
		} else if len(recs) == 0 && err == nil {
			err = fmt.Errorf("%q is not an offset message id: give the topic for a msgId (UNIQ_KEY)", q.ID)
		}
	default:
		recs, err = f.queryBoth(broker.MessageQuery{Topic: q.Topic, Key: q.Key})
	}
	if err != nil {
		return nil, err
	}
	recs = oneEntryPerMessage(recs)
	out := make([]console.Message, 0, len(recs))
	for _, r := range recs {
		out = append(out, f.life(r))
	}
	return out, nil
}

// finder is one look-up's calls, as one caller.
type finder struct {
	ctx    context.Context
	core   *broker.Broker
	caller broker.Caller
	addr   string
}

// queryBoth looks q up on its topic and, for delayed messages, on the
// timer topic (the copies bound for the topic: SUB on the topic reads
// them).
func (f finder) queryBoth(q broker.MessageQuery) ([]message.Record, error) {
	q.MaxNum, q.End, q.Timers = queryMax, math.MaxInt64, true
	res, err := await(f.ctx, func(done func(*broker.QueryResult, *broker.Error)) { f.core.QueryMessages(f.caller, q, done) })
	if err != nil {
		return nil, err
	}
	out := make([]message.Record, 0, len(res.Records))
	for i, raw := range res.Records {
		r, _, err := message.Decode(raw)
		if err != nil {
			return out, fmt.Errorf("%s: record %d found by key %q: %w", q.Topic, i, q.Key, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// life works out what became of a record: stored, dispatched into its
// queue, for a timer its due time and whether it was written back or
// cancelled, and which groups consumed it.
func (f finder) life(r message.Record) console.Message {
	props := message.DecodeProperties(r.Properties)
	m := console.Message{Topic: r.Topic, Broker: f.addr, Queue: int(r.QueueID), QueueOffset: r.QueueOffset,
		CommitLogOffset: r.PhysicalOffset, BornAt: time.UnixMilli(r.BornTimestamp), StoredAt: time.UnixMilli(r.StoreTimestamp),
		Properties: readableProps(props), Body: r.Body, MsgID: props[message.PropUniqKey], OffsetMsgID: message.OffsetMsgID(r.StoreHost, r.PhysicalOffset)}
	m.Life = append(m.Life, console.Event{At: m.StoredAt, What: "stored", Note: fmt.Sprintf("in %s at CommitLog offset %d", r.Topic, r.PhysicalOffset)})
	m.Life = append(m.Life, console.Event{What: "dispatched", Note: fmt.Sprintf("queue %d offset %d", r.QueueID, r.QueueOffset)})
	realTopic := props[message.PropRealTopic]
	if dueS, ok := props[message.PropTimerOutMS]; ok && r.Topic == timer.Topic {
		dueMs, _ := strconv.ParseInt(dueS, 10, 64)
		due := time.UnixMilli(dueMs)
		m.Life = append(m.Life, console.Event{At: due, What: "timer due", Note: "in the timer wheel, for " + realTopic})
		written, cancelled := false, false
		if uniq := m.MsgID; uniq != "" {
			rel, _ := f.queryBoth(broker.MessageQuery{Topic: realTopic, Key: uniq, Unique: true})
			for _, x := range rel {
				xp := message.DecodeProperties(x.Properties)
				switch {
				case x.Topic == realTopic && xp[message.PropUniqKey] == uniq && !written:
					written = true
					m.Life = append(m.Life, console.Event{At: time.UnixMilli(x.StoreTimestamp), What: "written back",
						Note: fmt.Sprintf("to %s queue %d offset %d", x.Topic, x.QueueID, x.QueueOffset)})
					m.Life = append(m.Life, f.consumers(x.Topic, x.QueueID, x.QueueOffset)...)
				case xp[message.PropTimerDelUniqKey] == realTopic+"+"+uniq && !cancelled:
					cancelled = true
					m.Life = append(m.Life, console.Event{At: time.UnixMilli(x.StoreTimestamp), What: "cancelled",
						Note: "cancel stored, offsetMsgId " + message.OffsetMsgID(x.StoreHost, x.PhysicalOffset)})
				}
			}
		}
		m.TimerPending = !written && !cancelled && due.After(time.Now())
		if m.TimerPending {
			m.Life = append(m.Life, console.Event{What: "pending", Note: "due in " + time.Until(due).Round(time.Millisecond).String()})
		}
		return m
	}
	m.Life = append(m.Life, f.consumers(r.Topic, r.QueueID, r.QueueOffset)...)
	return m
}

// consumers are the "consumed by" events of a message in a queue.
func (f finder) consumers(topic string, queue int32, offset int64) []console.Event {
	groups, err := await(f.ctx, func(done func([]string, *broker.Error)) { f.core.TopicConsumers(f.caller, topic, done) })
	if err != nil {
		return []console.Event{{What: "consumers unknown", Note: err.Error()}}
	}
	if len(groups) == 0 {
		return []console.Event{{What: "not consumed", Note: "no group reads " + topic}}
	}
	var out []console.Event
	for _, g := range groups {
		off, err := await(f.ctx, func(done func(int64, *broker.Error)) {
			f.core.ConsumerOffset(f.caller, g, broker.QueueRef{Topic: topic, QueueID: queue}, done)
		})
		var be *broker.Error
		switch {
		case errors.As(err, &be) && be.Status == broker.NotFound:
			out = append(out, console.Event{What: "not yet consumed by " + g})
		case err != nil:
			out = append(out, console.Event{What: "consumed by " + g + "?", Note: err.Error()})
		case off > offset:
			out = append(out, console.Event{What: "consumed by " + g, Note: fmt.Sprintf("its offset is %d", off)})
		default:
			out = append(out, console.Event{What: "not yet consumed by " + g})
		}
	}
	return out
}
