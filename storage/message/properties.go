package message

import (
	"bytes"
	"slices"
	"strings"
)

// Separators of the properties string: key NameValueSeparator value
// PropertySeparator, repeated.
const (
	// NameValueSeparator separates a key from its value (0x01).
	NameValueSeparator byte = 0x01
	// PropertySeparator ends each key/value pair (0x02).
	PropertySeparator byte = 0x02
)

// Property names (RocketMQ MessageConst) used by the broker.
const (
	PropKeys                  = "KEYS"
	PropTags                  = "TAGS"
	PropWait                  = "WAIT"
	PropDelay                 = "DELAY"
	PropRetryTopic            = "RETRY_TOPIC"
	PropRealTopic             = "REAL_TOPIC"
	PropRealQueueID           = "REAL_QID"
	PropTranMsg               = "TRAN_MSG"
	PropProducerGroup         = "PGROUP"
	PropMinOffset             = "MIN_OFFSET"
	PropMaxOffset             = "MAX_OFFSET"
	PropOriginMessageID       = "ORIGIN_MESSAGE_ID"
	PropReconsumeTime         = "RECONSUME_TIME"
	PropMaxReconsumeTimes     = "MAX_RECONSUME_TIMES"
	PropMsgRegion             = "MSG_REGION"
	PropTraceOn               = "TRACE_ON"
	PropUniqKey               = "UNIQ_KEY"
	PropConsumeStartTime      = "CONSUME_START_TIME"
	PropTranPreparedQueueOff  = "TRAN_PREPARED_QUEUE_OFFSET"
	PropTransactionCheckTimes = "TRANSACTION_CHECK_TIMES"
	PropCheckImmunityTimeSec  = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	PropTransactionID         = "__transactionId__"
	PropCorrelationID         = "CORRELATION_ID"
	PropReplyToClient         = "REPLY_TO_CLIENT"
	PropTTL                   = "TTL"
	PropArriveTime            = "ARRIVE_TIME"
	PropMsgType               = "MSG_TYPE"
	PropPushReplyTime         = "PUSH_REPLY_TIME"
	PropCluster               = "CLUSTER"
	PropShardingKey           = "__SHARDINGKEY"
	PropTimerDeliverMS        = "TIMER_DELIVER_MS"
	PropTimerDelaySec         = "TIMER_DELAY_SEC"
	PropTimerDelayMS          = "TIMER_DELAY_MS"
	PropTimerOutMS            = "TIMER_OUT_MS"
	PropTimerEnqueueMS        = "TIMER_ENQUEUE_MS"
	PropTimerDequeueMS        = "TIMER_DEQUEUE_MS"
	PropTimerRollTimes        = "TIMER_ROLL_TIMES"
	PropTimerDelUniqKey       = "TIMER_DEL_UNIQKEY"
	PropTimerDelayLevel       = "TIMER_DELAY_LEVEL"
	PropBornTimestamp         = "BORN_TIMESTAMP"
	PropDLQOriginTopic        = "DLQ_ORIGIN_TOPIC"
	PropDLQOriginMessageID    = "DLQ_ORIGIN_MESSAGE_ID"
	PropInnerNum              = "INNER_NUM"
	PropInnerBase             = "INNER_BASE"
	PropInnerMultiDispatch    = "INNER_MULTI_DISPATCH"
	PropInnerMultiQueueOffset = "INNER_MULTI_QUEUE_OFFSET"
)

// validPair reports whether a key/value pair survives an encode/decode round
// trip in both the Go and the Java client parsers.
func validPair(k, v string) bool {
	return k != "" && v != "" &&
		strings.IndexByte(k, NameValueSeparator) < 0 && strings.IndexByte(k, PropertySeparator) < 0 &&
		strings.IndexByte(v, NameValueSeparator) < 0 && strings.IndexByte(v, PropertySeparator) < 0
}

// EncodeProperties returns the RocketMQ properties string of m: for each key
// in sorted order, key 0x01 value 0x02 (so the result ends with 0x02, like the
// clients' encoders). Pairs that could not be decoded again are omitted: an
// empty key or value (the Go client never writes them, the Java parser drops
// them) or a key or value containing 0x01 or 0x02.
func EncodeProperties(m map[string]string) []byte {
	return AppendProperties(nil, m)
}

// AppendProperties appends the encoding of m (see EncodeProperties) to dst.
func AppendProperties(dst []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if validPair(k, v) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		dst = appendPair(dst, k, m[k])
	}
	return dst
}

func appendPair(dst []byte, k, v string) []byte {
	dst = append(dst, k...)
	dst = append(dst, NameValueSeparator)
	dst = append(dst, v...)
	return append(dst, PropertySeparator)
}

// AppendProperty appends one key/value pair to the encoded properties props
// without decoding them, adding a missing trailing 0x02 first. If key is
// already present the new value wins: both client parsers keep the last
// occurrence. An invalid pair (see EncodeProperties) leaves props unchanged.
func AppendProperty(props []byte, key, value string) []byte {
	if !validPair(key, value) {
		return props
	}
	if len(props) > 0 && props[len(props)-1] != PropertySeparator {
		props = append(props, PropertySeparator)
	}
	return appendPair(props, key, value)
}

// AppendPropertyBytes is AppendProperty with the value as bytes (no string
// made).
func AppendPropertyBytes(props []byte, key string, value []byte) []byte {
	if key == "" || len(value) == 0 || strings.IndexByte(key, NameValueSeparator) >= 0 ||
		strings.IndexByte(key, PropertySeparator) >= 0 || bytes.IndexByte(value, NameValueSeparator) >= 0 ||
		bytes.IndexByte(value, PropertySeparator) >= 0 {
		return props
	}
	if len(props) > 0 && props[len(props)-1] != PropertySeparator {
		props = append(props, PropertySeparator)
	}
	props = append(props, key...)
	props = append(props, NameValueSeparator)
	props = append(props, value...)
	return append(props, PropertySeparator)
}

// DecodeProperties parses a properties string the way the Go client does:
// split on 0x02, then keep each piece that splits on 0x01 into exactly a key
// and a value; empty keys and other malformed pieces are skipped. A later
// duplicate key overrides an earlier one. It never fails.
func DecodeProperties(b []byte) map[string]string {
	m := make(map[string]string, bytes.Count(b, []byte{PropertySeparator})+1)
	for item := range bytes.SplitSeq(b, []byte{PropertySeparator}) {
		if k, v, ok := splitPair(item); ok {
			m[string(k)] = string(v)
		}
	}
	return m
}

// splitPair splits one item into key and value if it is well formed.
func splitPair(item []byte) (k, v []byte, ok bool) {
	i := bytes.IndexByte(item, NameValueSeparator)
	if i <= 0 || bytes.IndexByte(item[i+1:], NameValueSeparator) >= 0 {
		return nil, nil, false
	}
	return item[:i], item[i+1:], true
}

// LookupProperty returns the value of key in the encoded properties b,
// following the rules of DecodeProperties (last occurrence wins), without
// building a map.
func LookupProperty(b []byte, key string) (string, bool) {
	v, ok := LookupPropertyBytes(b, key)
	return string(v), ok
}

// LookupPropertyBytes is LookupProperty without a copy: the value aliases b.
// It does not allocate, so filters can evaluate properties per message
// straight from a stored record.
func LookupPropertyBytes(b []byte, key string) ([]byte, bool) {
	var (
		val   []byte
		found bool
	)
	for len(b) > 0 {
		k, v, rest, ok := NextProperty(b)
		if ok && string(k) == key {
			val, found = v, true
		}
		b = rest
	}
	return val, found
}

// NextProperty splits the first item off the encoded properties b: ok
// reports a well-formed pair (key, value), which alias b; rest is what
// follows the item. Iterate with
//
//	for len(b) > 0 { k, v, rest, ok := NextProperty(b); ...; b = rest }
//
// Items are kept or skipped by the rules of DecodeProperties.
func NextProperty(b []byte) (key, value, rest []byte, ok bool) {
	item := b
	if i := bytes.IndexByte(b, PropertySeparator); i >= 0 {
		item, rest = b[:i], b[i+1:]
	}
	key, value, ok = splitPair(item)
	return key, value, rest, ok
}
