package router

// The hot path of a plain send: SEND_MESSAGE (10) or SEND_MESSAGE_V2 (310)
// of one message to an existing, writable topic, with no delay or timer,
// transaction, retry or batch. It is served from the frame as it lies in
// gnet's read buffer (netloop.FrameHandler), with the allocations of the
// general path left out:
//
//   - the header is read in place (remoting.HeaderView): no Command, no
//     map, no strings;
//   - the properties are checked and extended without a map: the client's
//     encoded properties are kept as they are, CLUSTER (and UNIQ_KEY when
//     the client sent none) appended, which both clients' parsers read like
//     the re-encoded form (the last occurrence of a key wins);
//   - the stored record is encoded on the event loop into a pooled buffer,
//     and handed to the commitlog writer in a pooled Append through the
//     writer's inbox (no protoactor message per send);
//   - the writer answers from its goroutine, encoding the response straight
//     into the connection's outbox (no Command, no map) and writing it with
//     the other answers of its batch;
//   - under an ACL the signature is checked from the frame too
//     (auth.Guard.AllowView: the fields sorted in place, an HMAC kept per
//     connection for the key it signs with, the account it names cached
//     until the ACL changes), so signed sends stay on this path.
//
// Anything else (a missing or malformed field, an unknown topic, a refusal
// of any kind, properties the general path would rewrite) is left to the
// general path (handleSend), which refuses or serves it with its own rules:
// the hot path decides before it acts, so a frame it declines is untouched.

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// onFrame serves plain sends and declines every other frame (OnFrame, in
// recover.go, calls it).
func (r *Router) onFrame(c *netloop.Conn, frame []byte) bool {
	if code, ok := remoting.PeekCode(frame); ok && code != remoting.SendMessage && code != remoting.SendMessageV2 {
		return false
	}
	if !r.core.Ready() || c.Congested() {
		return false // the general path refuses
	}
	cs := connStateOf(c)
	v := &cs.view
	if v.Parse(frame) != nil || v.IsResponse() || (v.Code != remoting.SendMessage && v.Code != remoting.SendMessageV2) {
		return false
	}
	return r.fastSend(c, cs, v)
}

// plainSend is a send request's header, read in place.
type plainSend struct {
	topic          []byte
	queueID        int32
	sysFlag        int32
	bornTimestamp  int64
	flag           int32
	properties     []byte
	reconsumeTimes int32
}

// read reads the header fields (V1 names, or the V2 one-letter keys); it
// reports false for anything the general path should look at: a missing
// or malformed field, a batch.
func (p *plainSend) read(v *remoting.HeaderView) bool {
	names := &sendNamesV1
	if v.Code == remoting.SendMessageV2 {
		if _, v1 := v.Field("topic"); !v1 {
			names = &sendNamesV2
		}
	}
	group, _ := v.Field(names.producerGroup)
	topic, _ := v.Field(names.topic)
	if len(group) == 0 || len(topic) == 0 {
		return false
	}
	p.topic = topic
	var ok [5]bool
	var n int64
	n, ok[0] = intField(v, names.queueID, 32, true)
	p.queueID = int32(n)
	n, ok[1] = intField(v, names.sysFlag, 32, true)
	p.sysFlag = int32(n)
	p.bornTimestamp, ok[2] = intField(v, names.bornTimestamp, 64, true)
	n, ok[3] = intField(v, names.flag, 32, true)
	p.flag = int32(n)
	n, ok[4] = intField(v, names.reconsumeTimes, 32, false)
	p.reconsumeTimes = int32(n)
	if ok != [5]bool{true, true, true, true, true} {
		return false
	}
	if _, ok := intField(v, names.maxReconsumeTimes, 32, false); !ok {
		return false
	}
	if _, ok := intField(v, names.defaultQueueNums, 32, false); !ok {
		return false
	}
	if b, _ := v.Field(names.batch); string(b) == "true" {
		return false
	}
	p.properties, _ = v.Field(names.properties)
	return true
}

// sendNames are the header keys of one send header version.
type sendNames struct {
	producerGroup, topic, queueID, sysFlag, bornTimestamp, flag, properties, reconsumeTimes,
	maxReconsumeTimes, batch, defaultQueueNums string
}

var (
	sendNamesV1 = sendNames{"producerGroup", "topic", "queueId", "sysFlag", "bornTimestamp", "flag", "properties",
		"reconsumeTimes", "maxReconsumeTimes", "batch", "defaultTopicQueueNums"}
	sendNamesV2 = sendNames{"a", "b", "e", "f", "g", "h", "i", "j", "l", "m", "d"}
)

// intField parses a decimal integer field of the given bit size as
// strconv.ParseInt does; an absent field is 0 and ok unless required.
func intField(v *remoting.HeaderView, key string, bits int, required bool) (int64, bool) {
	b, present := v.Field(key)
	if !present || len(b) == 0 {
		return 0, !required
	}
	return parseInt(b, bits)
}

// parseInt is strconv.ParseInt(string(b), 10, bits) without the string.
func parseInt(b []byte, bits int) (int64, bool) {
	neg := false
	switch b[0] {
	case '-':
		neg, b = true, b[1:]
	case '+':
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	limit := uint64(1) << (bits - 1)
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u >= 1<<60 { // u*10 would not fit, and is out of range anyway
			u = limit + 1
			continue
		}
		u = u*10 + uint64(c-'0')
	}
	if (!neg && u >= limit) || (neg && u > limit) {
		return 0, false
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

// fastSend serves a plain send, or declines it (false) before acting.
func (r *Router) fastSend(c *netloop.Conn, cs *connState, v *remoting.HeaderView) bool {
	var h plainSend
	if !h.read(v) || !r.core.PlainReady() {
		return false // the general path refuses
	}
	cfg, ok := r.topicView.Load().Topics[string(h.topic)]
	if !ok || !r.core.PlainTopicOK(cfg, len(v.Body), len(h.properties), h.sysFlag, h.queueID) {
		return false
	}
	topic := cfg.TopicName
	uniqAt, uniqLen, ok := broker.ScanPlainProperties(h.properties)
	if !ok || !r.core.PlainTypeOK(cfg, h.properties) || cs.inflight.Load() >= r.p.Settings().MaxInflightPerConn {
		return false
	}
	if r.guard != nil && !r.guard.AllowView(c.RemoteAddrPort(), v, auth.Need{Kind: auth.KindTopic, Name: topic, Perm: auth.PermPub}, &cs.acl) {
		return false // the general path decides again, and refuses
	}
	if h.queueID < 0 {
		h.queueID = rand.Int32N(max(cfg.WriteQueueNums, 1))
	}
	props := append(cs.props[:0], h.properties...)
	if len(props) > 0 && props[len(props)-1] != message.PropertySeparator {
		props = append(props, message.PropertySeparator)
	}
	if uniqLen == 0 {
		uniq := r.core.Uniq().Next()
		props = message.AppendProperty(props, message.PropUniqKey, uniq)
		uniqAt, uniqLen = len(props)-len(uniq)-1, len(uniq)
	}
	props = message.AppendProperty(props, message.PropCluster, r.cfg.Cluster)
	cs.props = props
	rec := message.Record{
		QueueID: h.queueID, Flag: h.flag, SysFlag: h.sysFlag, BornTimestamp: h.bornTimestamp,
		BornHost: c.RemoteAddrPort(), StoreTimestamp: time.Now().UnixMilli(), StoreHost: r.core.Advertise(),
		ReconsumeTimes: h.reconsumeTimes, Body: v.Body, Topic: topic, Properties: props,
	}
	q := r.sends.get(r)
	buf, err := rec.Encode(q.buf[:0])
	if err != nil {
		r.sends.put(q)
		return false
	}
	q.buf = buf
	propsAt := len(buf) - len(props)
	q.uniq = buf[propsAt+uniqAt : propsAt+uniqAt+uniqLen : propsAt+uniqAt+uniqLen]
	q.c, q.cs = c, cs
	q.opaque, q.serialize, q.oneway, q.queueID = v.Opaque, v.Serialize, v.IsOneway(), h.queueID
	q.app.Key = writer.QueueKey{Topic: topic, QueueID: h.queueID}
	q.recs[0] = buf
	q.app.Records = q.recs[:]
	r.m.received(v.Code)
	cs.inflight.Add(1)
	r.backlog.Add(1)
	if r.appends.PushKicked(&q.app) {
		cs.kicked = true // yield once the read is handled (OnTrafficDone)
	}
	return true
}

// OnTrafficDone implements netloop.FrameHandler. When the read woke the
// idle writer, its worker is ready to run on this thread's processor:
// yielding lets it run here at once (the event loop resumes on the other
// processor, or right after), instead of waiting for another thread to
// wake up and take it.
func (r *Router) OnTrafficDone(c *netloop.Conn) {
	if cs := connStateOf(c); cs.kicked {
		cs.kicked = false
		runtime.Gosched()
	}
}

// sendPool recycles the requests of the hot path.
type sendPool struct{ p sync.Pool }

// plainReq is one plain send on its way through the writer: the Append,
// the encoded record and what the answer needs.
type plainReq struct {
	app       writer.Append
	recs      [1][]byte
	buf       []byte
	r         *Router
	c         *netloop.Conn
	cs        *connState
	uniq      []byte // UNIQ_KEY, inside buf
	opaque    int32
	queueID   int32
	serialize remoting.SerializeType
	oneway    bool
	res       writer.Result // for AppendFrame
	scratch   [64]byte
}

// maxPooledRecord is the largest record buffer kept for reuse.
const maxPooledRecord = 64 << 10

func (p *sendPool) get(r *Router) *plainReq {
	if q, ok := p.p.Get().(*plainReq); ok {
		return q
	}
	q := &plainReq{r: r}
	q.app.Reply = q.reply
	return q
}

func (p *sendPool) put(q *plainReq) {
	if cap(q.buf) > maxPooledRecord {
		q.buf = nil
	}
	q.recs[0], q.app.Records, q.c, q.cs, q.uniq, q.res = nil, nil, nil, nil, nil, writer.Result{}
	q.app.Reset()
	p.p.Put(q)
}

// reply answers the send; it runs on the writer's (or the syncer's)
// goroutine, once.
func (q *plainReq) reply(res writer.Result) {
	r := q.r
	q.cs.inflight.Add(-1)
	r.backlog.Add(-1)
	if !q.oneway {
		var err error
		if res.Err != nil {
			code, remark := sendFailure(res.Err) // the broker's rule, in remoting's codes
			resp := remoting.NewResponse(&remoting.Command{Opaque: q.opaque, Serialize: q.serialize}, code, remark)
			err = outbox(res.Out).Send(q.c, resp)
		} else {
			q.res = res
			err = outbox(res.Out).SendFrame(q.c, q)
		}
		if err != nil {
			r.log.Debug().Err(err).Str("remote", q.c.RemoteAddr()).Msg("send response not delivered")
		}
	}
	r.sends.put(q)
}

// AppendFrame implements netloop.FrameAppender: the SEND_OK response, as
// answerSend builds it.
func (q *plainReq) AppendFrame(dst []byte) ([]byte, error) {
	s := q.scratch[:0]
	for i, off := range q.res.Offsets {
		if i > 0 {
			s = append(s, ',')
		}
		s = message.AppendOffsetMsgID(s, q.r.core.Advertise(), off)
	}
	msgID := len(s)
	s = strconv.AppendInt(s, int64(q.queueID), 10)
	queueID := len(s)
	s = strconv.AppendInt(s, q.res.QueueOffset, 10)
	ext := [...]remoting.ExtField{
		{Key: "MSG_REGION", Value: msgRegion},
		{Key: "TRACE_ON", Value: traceOn},
		{Key: "msgId", Value: s[:msgID]},
		{Key: "queueId", Value: s[msgID:queueID]},
		{Key: "queueOffset", Value: s[queueID:]},
		{Key: "transactionId", Value: q.uniq},
	}
	return remoting.AppendResponseFrame(dst, q.serialize, q.opaque, remoting.Success, "", ext[:], nil)
}

var (
	msgRegion = []byte("DefaultRegion")
	traceOn   = []byte("true")
)
