package grpcgw

// Translation between gRPC messages and stored RocketMQ messages
// (docs/grpc.md, "Properties"; the Apache proxy's SendMessageActivity and
// GrpcConverter).

import (
	"bytes"
	"compress/zlib"
	"crypto/md5" //nolint:gosec // the body digest the SDKs check, not security
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// Property names the gateway reads or writes besides storage/message's.
const (
	propPopCK         = "POP_CK"
	propTraceContext  = "TRACE_CONTEXT"
	propBornHost      = "BORN_HOST"
	propBornTimestamp = "BORN_TIMESTAMP"
	propDLQOrigTopic  = "DLQ_ORIGIN_TOPIC"
	propDLQOrigMsgID  = "DLQ_ORIGIN_MESSAGE_ID"
)

// Limits of a sent message (the Apache proxy's defaults).
const (
	maxMessageGroup    = 64
	maxUserProperties  = 128
	maxPropertiesBytes = 16 << 10
)

// reserved are the property names a user property may not take
// (RocketMQ's MessageConst.STRING_HASH_SET, plus those the gateway sets).
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`KEYS TAGS WAIT DELAY RETRY_TOPIC REAL_TOPIC REAL_QID TRAN_MSG PGROUP
		MIN_OFFSET MAX_OFFSET BUYER_ID ORIGIN_MESSAGE_ID TRANSFER_FLAG CORRECTION_FLAG MQ2_FLAG RECONSUME_TIME
		MSG_REGION TRACE_ON UNIQ_KEY MAX_RECONSUME_TIMES CONSUME_START_TIME TRAN_PREPARED_QUEUE_OFFSET
		TRANSACTION_CHECK_TIMES CHECK_IMMUNITY_TIME_IN_SECONDS SHARDING_KEY __SHARDINGKEY __transactionId__
		CORRELATION_ID REPLY_TO_CLIENT TTL ARRIVE_TIME PUSH_REPLY_TIME CLUSTER MSG_TYPE INNER_MULTI_QUEUE_OFFSET
		INNER_MULTI_DISPATCH INNER_NUM INNER_BASE TIMER_DELIVER_MS TIMER_DELAY_SEC TIMER_DELAY_MS TIMER_OUT_MS
		TIMER_ENQUEUE_MS TIMER_DEQUEUE_MS TIMER_ROLL_TIMES TIMER_DEL_UNIQKEY TIMER_DELAY_LEVEL POP_CK
		POP_CK_OFFSET 1ST_POP_TIME TRACE_CONTEXT BORN_HOST BORN_TIMESTAMP DLQ_ORIGIN_TOPIC DLQ_ORIGIN_MESSAGE_ID
		__RECALL_HANDLE__ PRIORITY __LITE_TOPIC`) {
		m[k] = true
	}
	return m
}()

// BodyDigest is the digest the SDKs check: MD5, uppercase hex (the only
// one both the Go and the Node.js SDK accept).
func BodyDigest(body []byte) *v2.Digest {
	sum := md5.Sum(body) //nolint:gosec // see above
	return &v2.Digest{Type: v2.DigestType_MD5, Checksum: strings.ToUpper(hex.EncodeToString(sum[:]))}
}

// sendFields is what a send needs of one gRPC message.
type sendFields struct {
	props   map[string]string
	sysFlag int32
	typ     v2.MessageType
	group   string // message group ("" none)
	born    int64  // born timestamp, ms
}

// fromMessage turns a gRPC message into a send's properties and flags,
// or the status refusing what only the protocol knows (its fields); the
// rules of a send (body size, the message type, the delay) are the
// broker's (actors/broker).
func fromMessage(m *v2.Message) (sendFields, *v2.Status) {
	sp := m.GetSystemProperties()
	var f sendFields
	if sp == nil {
		return f, statusf(v2.Code_BAD_REQUEST, "message has no system_properties")
	}
	if sp.GetMessageId() == "" {
		return f, statusf(v2.Code_ILLEGAL_MESSAGE_ID, "message id is empty")
	}
	now := time.Now()
	if len(m.GetUserProperties()) > maxUserProperties {
		return f, statusf(v2.Code_MESSAGE_PROPERTIES_TOO_LARGE, "%d user properties exceed the limit of %d", len(m.GetUserProperties()), maxUserProperties)
	}
	props := make(map[string]string, len(m.GetUserProperties())+8)
	size := 0
	for k, v := range m.GetUserProperties() {
		if k == "" || reserved[k] || !validPropText(k) || !validPropText(v) {
			return f, statusf(v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "user property key %s is reserved or not allowed", quote(k))
		}
		size += len(k) + len(v)
		props[k] = v
	}
	if size > maxPropertiesBytes {
		return f, statusf(v2.Code_MESSAGE_PROPERTIES_TOO_LARGE, "user properties of %d bytes exceed the limit of %d", size, maxPropertiesBytes)
	}
	props[message.PropUniqKey] = sp.GetMessageId()
	if tag := sp.GetTag(); tag != "" {
		if strings.Contains(tag, "|") || !validPropText(tag) || strings.TrimSpace(tag) == "" {
			return f, statusf(v2.Code_ILLEGAL_MESSAGE_TAG, "tag %s is not allowed", quote(tag))
		}
		props[message.PropTags] = tag
	}
	if keys := sp.GetKeys(); len(keys) > 0 {
		for _, k := range keys {
			if strings.TrimSpace(k) == "" || !validPropText(k) {
				return f, statusf(v2.Code_ILLEGAL_MESSAGE_KEY, "key %s is not allowed", quote(k))
			}
		}
		props[message.PropKeys] = strings.Join(keys, " ")
	}
	f.typ = sp.GetMessageType()
	if g := sp.GetMessageGroup(); g != "" {
		if len(g) > maxMessageGroup || !validPropText(g) {
			return f, statusf(v2.Code_ILLEGAL_MESSAGE_GROUP, "message group %s is longer than %d bytes or not allowed", quote(g), maxMessageGroup)
		}
		props[message.PropShardingKey] = g
		f.group = g
	}
	if ts := sp.GetDeliveryTimestamp(); ts != nil {
		// The broker plans it (actors/timer: the longest delay, a time
		// already past is delivered at once), as for a remoting send.
		props[message.PropTimerDeliverMS] = strconv.FormatInt(ts.AsTime().UnixMilli(), 10)
	}
	if p := sp.Priority; p != nil {
		// The broker checks it and routes it (broker.PriorityQueue).
		props[message.PropPriority] = strconv.FormatInt(int64(*p), 10)
	}
	if sp.LiteTopic != nil {
		// The broker checks it (broker.checkLite) and appends the message
		// to its lite topic.
		props[message.PropLiteTopic] = sp.GetLiteTopic()
	}
	if tc := sp.GetTraceContext(); tc != "" {
		props[propTraceContext] = tc
	}
	if h := sp.GetBornHost(); h != "" {
		props[propBornHost] = h
	}
	f.born = now.UnixMilli()
	if bt := sp.GetBornTimestamp(); bt != nil {
		f.born = bt.AsTime().UnixMilli()
	}
	props[propBornTimestamp] = strconv.FormatInt(f.born, 10)
	if f.typ == v2.MessageType_TRANSACTION {
		props[message.PropTranMsg] = "true"
		f.sysFlag |= message.SysFlagTransactionPrepared
		if d := sp.GetOrphanedTransactionRecoveryDuration(); d != nil && d.AsDuration() > 0 {
			sec := min(d.AsDuration(), time.Hour) / time.Second
			props[message.PropCheckImmunityTimeSec] = strconv.FormatInt(int64(sec), 10)
		}
	}
	if sp.GetBodyEncoding() == v2.Encoding_GZIP {
		return f, statusf(v2.Code_BAD_REQUEST, "GZIP body encoding is not supported: send the body as IDENTITY")
	}
	f.props = props
	return f, nil
}

// validPropText refuses what the properties encoding cannot carry (its
// separators 0x01 and 0x02) and invalid UTF-8.
func validPropText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsAny(s, "\x01\x02")
}

// toMessage turns a stored record into a gRPC message (GrpcConverter's
// buildMessage): the body decompressed, the MD5 digest, the system
// properties from the record's properties.
func toMessage(r *message.Record, brokerName, storeAddr string) *v2.Message {
	props := message.DecodeProperties(r.Properties)
	body := r.Body
	if r.SysFlag&message.SysFlagCompressed != 0 {
		if b, err := inflate(body); err == nil {
			body = b
		}
	}
	sp := &v2.SystemProperties{
		MessageId:      props[message.PropUniqKey],
		BodyDigest:     BodyDigest(body),
		BodyEncoding:   v2.Encoding_IDENTITY,
		MessageType:    typeOf(props, r.SysFlag),
		BornTimestamp:  timestamppb.New(time.UnixMilli(r.BornTimestamp)),
		BornHost:       r.BornHost.Addr().String(),
		StoreTimestamp: timestamppb.New(time.UnixMilli(r.StoreTimestamp)),
		StoreHost:      storeAddr,
		QueueId:        r.QueueID,
		QueueOffset:    &r.QueueOffset,
	}
	if sp.MessageId == "" {
		sp.MessageId = r.OffsetMsgID()
	}
	attempt := r.ReconsumeTimes + 1
	sp.DeliveryAttempt = &attempt
	if v, ok := props[message.PropTags]; ok {
		sp.Tag = &v
	}
	if v := props[message.PropKeys]; v != "" {
		sp.Keys = strings.Fields(v)
	}
	if v, ok := props[message.PropShardingKey]; ok {
		sp.MessageGroup = &v
	}
	if v, err := strconv.ParseInt(props[message.PropTimerDeliverMS], 10, 64); err == nil {
		sp.DeliveryTimestamp = timestamppb.New(time.UnixMilli(v))
	}
	if v, ok := props[propPopCK]; ok {
		sp.ReceiptHandle = &v
		if h, err := parseHandle(v); err == nil {
			sp.InvisibleDuration = durationpb.New(time.Duration(h.invisibleMs) * time.Millisecond)
		}
	}
	if p, err := message.ParsePriority(props[message.PropPriority]); err == nil {
		sp.Priority = &p
	}
	if v, ok := props[message.PropLiteTopic]; ok {
		sp.LiteTopic = &v
	}
	if v, ok := props[propTraceContext]; ok {
		sp.TraceContext = &v
	}
	if v, ok := props[propDLQOrigTopic]; ok {
		sp.DeadLetterQueue = &v2.DeadLetterQueue{Topic: v, MessageId: props[propDLQOrigMsgID]}
	}
	user := map[string]string{}
	for k, v := range props {
		if !reserved[k] {
			user[k] = v
		}
	}
	_ = brokerName
	return &v2.Message{Topic: &v2.Resource{Name: r.Topic}, UserProperties: user, SystemProperties: sp, Body: body}
}

// typeOf is a stored message's type: the broker's rule (RocketMQ's
// order: transaction, delay, FIFO), as its type check reads it.
func typeOf(props map[string]string, sysFlag int32) v2.MessageType {
	switch broker.MessageType(props, sysFlag) {
	case meta.MessageTypeTransaction:
		return v2.MessageType_TRANSACTION
	case meta.MessageTypeDelay:
		return v2.MessageType_DELAY
	case meta.MessageTypeFIFO:
		return v2.MessageType_FIFO
	case meta.MessageTypePriority:
		return v2.MessageType_PRIORITY
	case meta.MessageTypeLite:
		return v2.MessageType_LITE
	}
	return v2.MessageType_NORMAL
}

// maxInflated bounds a decompressed body.
const maxInflated = 64 << 20

// inflate undoes RocketMQ's default (zlib) body compression.
func inflate(b []byte) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("inflate body: %w", err)
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, maxInflated))
	if err != nil {
		return nil, fmt.Errorf("inflate body: %w", err)
	}
	return out, nil
}

// filterOf is a gRPC filter as a remoting subscription's expression and
// type (TAG with "*" when empty; SQL92).
func filterOf(f *v2.FilterExpression) (expr, typ string) {
	expr = strings.TrimSpace(f.GetExpression())
	if f.GetType() == v2.FilterType_SQL {
		return expr, "SQL92"
	}
	if expr == "" {
		expr = "*"
	}
	return expr, "TAG"
}

// splitTags splits a TAG expression "a || b".
func splitTags(expr string) []string {
	var out []string
	for t := range strings.SplitSeq(expr, "||") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
