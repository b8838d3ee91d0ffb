package pop

import (
	"fmt"
	"strconv"
	"strings"
)

// Handle is a receipt handle: RocketMQ's extraInfo string (ExtraInfoUtil),
// "startOffset popTime invisibleTime reviveQid topicType brokerName queueId
// offset", returned in property POP_CK of each popped message and sent back
// in ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME (field extraInfo).
type Handle struct {
	StartOffset   int64
	PopTime       int64 // ms since the epoch
	InvisibleTime int64 // ms
	ReviveQid     int32
	TopicType     string // "0": the topic itself, "1": the retry topic
	BrokerName    string
	QueueID       int32
	Offset        int64
}

// String encodes h as RocketMQ's extraInfo.
func (h Handle) String() string {
	tt := h.TopicType
	if tt == "" {
		tt = "0"
	}
	return strconv.FormatInt(h.StartOffset, 10) + " " + strconv.FormatInt(h.PopTime, 10) + " " +
		strconv.FormatInt(h.InvisibleTime, 10) + " " + strconv.Itoa(int(h.ReviveQid)) + " " + tt + " " +
		h.BrokerName + " " + strconv.Itoa(int(h.QueueID)) + " " + strconv.FormatInt(h.Offset, 10)
}

// ParseHandle decodes an extraInfo string.
func ParseHandle(s string) (Handle, error) {
	f := strings.Split(s, " ")
	if len(f) < 7 {
		return Handle{}, fmt.Errorf("pop: receipt handle %q has %d fields, want 8", s, len(f))
	}
	var h Handle
	var err error
	num := func(i int) int64 {
		if err != nil {
			return 0
		}
		var v int64
		v, err = strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			err = fmt.Errorf("pop: receipt handle field %d %q: %w", i, f[i], err)
		}
		return v
	}
	h.StartOffset, h.PopTime, h.InvisibleTime = num(0), num(1), num(2)
	h.ReviveQid = int32(num(3))
	h.TopicType = f[4]
	h.BrokerName = f[5]
	h.QueueID = int32(num(6))
	if len(f) >= 8 {
		h.Offset = num(7)
	} else {
		h.Offset = h.StartOffset
	}
	if err != nil {
		return Handle{}, err
	}
	return h, nil
}
