package index

import (
	"bytes"
	"fmt"

	"github.com/wheelmq/wheelmq/storage/message"
)

// Result caps of QUERY_MESSAGE, as RocketMQ's broker applies them.
const (
	// MaxQueryResults caps maxNum (MessageStoreConfig.maxMsgsNumBatch).
	MaxQueryResults = 64
	// UniqueKeyQueryResults is the maxNum of a query by UNIQ_KEY
	// (extField _UNIQUE_KEY_QUERY=true; MessageStoreConfig.defaultQueryMaxNum).
	UniqueKeyQueryResults = 32
)

// Query looks messages up by key (QUERY_MESSAGE).
type Query struct {
	Topic string
	Key   string
	// MaxNum caps the results (at most MaxQueryResults).
	MaxNum int
	// Begin and End bound the store timestamps (ms, inclusive).
	Begin, End int64
	// Unique marks a lookup by UNIQ_KEY: MaxNum becomes UniqueKeyQueryResults.
	Unique bool
	// Reply receives the result on the stage's goroutine; it must not block.
	Reply func(QueryResult)
}

// Fail implements stage.Failable: the query is answered with the error.
func (q *Query) Fail(err error) { q.Reply(QueryResult{Err: err}) }

// QueryResult is the answer to a Query.
type QueryResult struct {
	// Records are the stored records found, in CommitLog order, each one
	// checked to carry the key (UNIQ_KEY or one of KEYS) in the topic.
	Records [][]byte
	// LastOffset and LastTimestamp are the CommitLog offset and store time
	// of the newest index entry (indexLastUpdatePhyoffset and
	// indexLastUpdateTimestamp of the response).
	LastOffset, LastTimestamp int64
	// Err reports an index or CommitLog read failure; Records holds what
	// could be read anyway.
	Err error
}

// View reads one record by CommitLog offset (VIEW_MESSAGE_BY_ID).
type View struct {
	Offset int64
	// Reply receives the record, or an error when there is no record at
	// that offset; on the stage's goroutine, it must not block.
	Reply func(rec []byte, err error)
}

// Fail implements stage.Failable.
func (v *View) Fail(err error) { v.Reply(nil, err) }

func (x *Indexer) query(q *Query) QueryResult {
	var res QueryResult
	res.LastOffset, res.LastTimestamp = x.ix.Last()
	max := min(q.MaxNum, MaxQueryResults)
	if q.Unique {
		max = UniqueKeyQueryResults
	}
	if max <= 0 || q.Key == "" {
		return res
	}
	if q.End < q.Begin {
		return res
	}
	hits, err := x.ix.Lookup(q.Topic, q.Key, q.Begin, q.End, max)
	res.Err = err
	for _, h := range hits {
		rec, err := x.view(h.Offset)
		if err != nil {
			x.opts.Logger.Warn().Err(err).Int64("offset", h.Offset).Msg("indexed record does not read back")
			continue
		}
		if carriesKey(rec, q.Topic, q.Key) {
			res.Records = append(res.Records, rec)
		}
	}
	return res
}

// carriesKey reports whether rec is stored under topic with key as its
// UNIQ_KEY or among its KEYS (a hash collision otherwise).
func carriesKey(rec []byte, topic, key string) bool {
	l, err := message.ParseLayout(rec)
	if err != nil || string(l.Topic(rec)) != topic {
		return false
	}
	props := l.Properties(rec)
	if u, ok := message.LookupPropertyBytes(props, message.PropUniqKey); ok && string(u) == key {
		return true
	}
	keys, _ := message.LookupPropertyBytes(props, message.PropKeys)
	for _, k := range bytes.Split(keys, []byte{' '}) {
		if string(k) == key {
			return true
		}
	}
	return false
}

// view reads the record whose first byte is at off.
func (x *Indexer) view(off int64) ([]byte, error) {
	rec, _, err := x.opts.Store.CommitLog.Read(off)
	if err == nil && message.PeekPhysicalOffset(rec) != off {
		err = fmt.Errorf("offset %d is not the start of a record", off) // Read skipped a blank
	}
	if err != nil {
		return nil, fmt.Errorf("can not find message by the offset, %d: %w", off, err)
	}
	return rec, nil
}
