package admin

// Message lookups: QUERY_MESSAGE (12) by key or UNIQ_KEY, VIEW_MESSAGE_BY_ID
// (33) by CommitLog offset. Both answer stored records in the CommitLog
// layout (storage/message), back to back.

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// MessageQuery is a QUERY_MESSAGE: messages of Topic carrying Key among
// their KEYS, or as their UNIQ_KEY when Unique is set, stored between
// Begin and End (ms, inclusive).
type MessageQuery struct {
	Topic, Key string
	// Max caps the results (the broker caps it too: 64, and 32 for a
	// UNIQ_KEY lookup). Zero: 32.
	Max int
	// Begin and End bound the store time; End zero means no bound.
	Begin, End int64
	// Unique looks Key up as a UNIQ_KEY (_UNIQUE_KEY_QUERY=true).
	Unique bool
}

// QueryAnswer is what a broker found.
type QueryAnswer struct {
	Records []message.Record
	// IndexOffset and IndexTime are the CommitLog offset and store time of
	// the newest index entry: how far the broker's index has got.
	IndexOffset, IndexTime int64
}

// QueryMessages sends a QUERY_MESSAGE to broker. Nothing found is an empty
// answer, not an error.
func (s *Session) QueryMessages(ctx context.Context, broker string, q MessageQuery) (QueryAnswer, error) {
	if q.Max <= 0 {
		q.Max = 32
	}
	if q.End == 0 {
		q.End = math.MaxInt64
	}
	f := map[string]string{"topic": q.Topic, "key": q.Key, "maxNum": strconv.Itoa(q.Max),
		"beginTimestamp": strconv.FormatInt(q.Begin, 10), "endTimestamp": strconv.FormatInt(q.End, 10)}
	if q.Unique {
		f["_UNIQUE_KEY_QUERY"] = "true"
	}
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.QueryMessage, f, nil), remoting.QueryNotFound)
	if err != nil {
		return QueryAnswer{}, err
	}
	var a QueryAnswer
	a.IndexOffset, _ = strconv.ParseInt(resp.Field("indexLastUpdatePhyoffset"), 10, 64)
	a.IndexTime, _ = strconv.ParseInt(resp.Field("indexLastUpdateTimestamp"), 10, 64)
	if resp.Code == remoting.QueryNotFound {
		return a, nil
	}
	a.Records, err = DecodeRecords(resp.Body)
	if err != nil {
		return a, fmt.Errorf("QUERY_MESSAGE answer of %s: %w", broker, err)
	}
	return a, nil
}

// ViewMessage reads the record stored at a CommitLog offset
// (VIEW_MESSAGE_BY_ID, the offset of an offset message id).
func (s *Session) ViewMessage(ctx context.Context, broker string, offset int64) (message.Record, error) {
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.ViewMessageByID,
		map[string]string{"offset": strconv.FormatInt(offset, 10)}, nil))
	if err != nil {
		return message.Record{}, err
	}
	recs, err := DecodeRecords(resp.Body)
	if err != nil || len(recs) != 1 {
		return message.Record{}, fmt.Errorf("VIEW_MESSAGE_BY_ID answer of %s: want one record (%d found): %v", broker, len(recs), err)
	}
	return recs[0], nil
}

// DecodeRecords decodes stored records laid back to back.
func DecodeRecords(body []byte) ([]message.Record, error) {
	var out []message.Record
	for len(body) > 0 {
		r, n, err := message.Decode(body)
		if err != nil {
			return out, fmt.Errorf("record %d: %w", len(out), err)
		}
		out = append(out, r)
		body = body[n:]
	}
	return out, nil
}
