package grpcgw

// The transaction id the gateway hands out: enough for END_TRANSACTION to
// find the half message without state in the gateway.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/storage/message"
)

// txIDPrefix versions the transaction id format.
const txIDPrefix = "wtx1-"

// encodeTxID is "wtx1-<offsetMsgId>-<half queue offset>": the offset
// message id carries the half message's CommitLog offset, the queue offset
// its position in the half topic (END_TRANSACTION's commitLogOffset and
// tranStateTableOffset).
func encodeTxID(offsetMsgID, halfQueueOffset string) string {
	return txIDPrefix + offsetMsgID + "-" + halfQueueOffset
}

// txRef is a decoded transaction id.
type txRef struct {
	offsetMsgID     string
	commitLogOffset int64
	halfOffset      int64
}

// decodeTxID parses a transaction id of encodeTxID.
func decodeTxID(id string) (txRef, error) {
	rest, ok := strings.CutPrefix(id, txIDPrefix)
	if !ok {
		return txRef{}, errors.New("transaction id is not one this broker issued")
	}
	mid, off, ok := strings.Cut(rest, "-")
	if !ok {
		return txRef{}, errors.New("transaction id has no half offset")
	}
	_, cl, err := message.ParseOffsetMsgID(mid)
	if err != nil {
		return txRef{}, fmt.Errorf("transaction id: %w", err)
	}
	q, err := strconv.ParseInt(off, 10, 64)
	if err != nil || q < 0 {
		return txRef{}, errors.New("transaction id: bad half offset")
	}
	return txRef{offsetMsgID: mid, commitLogOffset: cl, halfOffset: q}, nil
}
