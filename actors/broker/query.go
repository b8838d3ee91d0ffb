package broker

// The queries family: messages looked up by key or unique key in a time
// range (QUERY_MESSAGE), by CommitLog offset (VIEW_MESSAGE_BY_ID, the
// offset message id), and by queue offset (the one queue reader of
// actors/pull, as a pull reads it), for the remoting codec and the
// console alike.

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/wheelmq/wheelmq/actors/index"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/storage/message"
)

// IndexOff is the remark of a look-up on a broker running without its
// message index.
const IndexOff = "the message index is turned off on this broker (wheelmq --index=false)"

// MessageQuery is a look-up by key (a KEYS entry) or, with Unique, by
// message id (UNIQ_KEY), in one topic.
type MessageQuery struct {
	Topic string
	Key   string
	// Unique looks the key up as a UNIQ_KEY (MaxNum then is the index's
	// UniqueKeyQueryResults).
	Unique bool
	// MaxNum caps the records answered (at most index.MaxQueryResults).
	MaxNum int
	// Begin and End bound the store timestamps (ms, inclusive).
	Begin, End int64
	// Timers adds the topic's timer copies (the timer topic's records
	// whose REAL_TOPIC is Topic, delayed messages not yet written back and
	// cancels), after the topic's own records: SUB on the topic reads them.
	Timers bool
}

// QueryResult is what a MessageQuery found.
type QueryResult struct {
	// Records are the stored records, in CommitLog order, each one
	// checked to carry the key in the topic (none: nothing found).
	Records [][]byte
	// LastOffset and LastTimestamp are the CommitLog offset and store
	// time of the index's newest entry.
	LastOffset, LastTimestamp int64
}

// QueryMessages looks messages up in the index (SUB on the topic).
func (b *Broker) QueryMessages(c Caller, q MessageQuery, done func(*QueryResult, *Error)) {
	if err := b.authorize(c, Need{Kind: KindTopic, Name: q.Topic, Perm: Sub}); err != nil {
		done(nil, err)
		return
	}
	st := b.p.Stage(index.StageName)
	if st == nil {
		done(nil, Errorf(Internal, IndexOff))
		return
	}
	var res QueryResult
	lookUp := func(topic string, keep func([]byte) bool, then func()) {
		st.Send(&index.Query{Topic: topic, Key: q.Key, MaxNum: q.MaxNum, Begin: q.Begin, End: q.End, Unique: q.Unique,
			Reply: func(got index.QueryResult) {
				if got.Err != nil {
					done(nil, Wrap(Internal, "query message index", got.Err))
					return
				}
				for _, rec := range got.Records {
					if keep(rec) {
						res.Records = append(res.Records, rec)
					}
				}
				res.LastOffset, res.LastTimestamp = got.LastOffset, got.LastTimestamp
				then()
			}})
	}
	answer := func() { done(&res, nil) }
	all := func([]byte) bool { return true }
	if !q.Timers || q.Topic == timer.Topic {
		lookUp(q.Topic, all, answer)
		return
	}
	lookUp(q.Topic, all, func() { lookUp(timer.Topic, func(rec []byte) bool { return realTopicIs(rec, q.Topic) }, answer) })
}

// realTopicIs reports whether a timer-topic record is bound for topic
// (its REAL_TOPIC property).
func realTopicIs(rec []byte, topic string) bool {
	l, err := message.ParseLayout(rec)
	if err != nil {
		return false
	}
	real, ok := message.LookupPropertyBytes(l.Properties(rec), message.PropRealTopic)
	return ok && string(real) == topic
}

// StoredMessage is one stored record: its bytes as the CommitLog holds
// them (what VIEW_MESSAGE_BY_ID answers) and decoded.
type StoredMessage struct {
	Raw    []byte
	Record message.Record
}

// ViewMessage reads the record stored at a CommitLog offset (the offset of
// an offset message id). The caller needs SUB on the record's topic,
// checked once it is read.
func (b *Broker) ViewMessage(c Caller, offset int64, done func(*StoredMessage, *Error)) {
	st := b.p.Stage(index.StageName)
	if st == nil {
		done(nil, Errorf(Internal, IndexOff))
		return
	}
	notFound := "can not find message by the offset, " + strconv.FormatInt(offset, 10)
	st.Send(&index.View{Offset: offset, Reply: func(rec []byte, err error) {
		if err != nil {
			done(nil, &Error{Status: Internal, Remark: notFound, Err: err})
			return
		}
		m, _, err := message.Decode(rec)
		if err != nil {
			done(nil, &Error{Status: Internal, Remark: notFound, Err: err})
			return
		}
		if e := b.authorize(c, Need{Kind: KindTopic, Name: m.Topic, Perm: Sub}); e != nil {
			done(nil, e)
			return
		}
		done(&StoredMessage{Raw: rec, Record: m}, nil)
	}})
}

// ReadQueue reads the message at one queue offset (SUB on the topic), as
// a pull reads it: the same reader, the same rule for a record it cannot
// read (--on-corruption), but no group, no statistics and nothing
// remembered. NotFound when the queue holds no message at that offset.
func (b *Broker) ReadQueue(c Caller, q QueueRef, offset int64, done func(*StoredMessage, *Error)) {
	if err := b.authorize(c, Need{Kind: KindTopic, Name: q.Topic, Perm: Sub}); err != nil {
		done(nil, err)
		return
	}
	if _, ok := b.p.Topics().Get(q.Topic); !ok {
		done(nil, Errorf(TopicNotFound, "topic[%s] not exist", q.Topic))
		return
	}
	st, e := b.stageFor(pull.StageName)
	if e != nil {
		done(nil, e)
		return
	}
	where := fmt.Sprintf("%s queue %d offset %d", q.Topic, q.QueueID, offset)
	st.Send(&pull.ReadQueue{Pos: pull.QueuePos{Topic: q.Topic, QueueID: q.QueueID, Offset: offset},
		Reply: func(rec []byte, err error) {
			switch {
			case errors.Is(err, pull.ErrNoMessage):
				done(nil, &Error{Status: NotFound, Remark: err.Error(), Err: err})
				return
			case err != nil:
				done(nil, Wrap(Internal, "read "+where, err))
				return
			}
			rec = bytes.Clone(rec) // the reader's buffer is reused
			m, _, err := message.Decode(rec)
			if err != nil {
				done(nil, Wrap(Internal, where, err))
				return
			}
			done(&StoredMessage{Raw: rec, Record: m}, nil)
		}})
}
