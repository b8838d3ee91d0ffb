package broker

// Send: a single message, a batch, a transaction's half message, a reply.
//
// The rules, in RocketMQ's order, each answered with a status and nothing
// stored:
//   - the caller's account without PUB on the topic (ACL)  -> Forbidden
//   - the broker not serving yet                           -> Busy
//   - a stage the send needs stopped for good              -> Internal
//   - disk at or above the full ratio                      -> Unavailable
//   - topic name: non-blank, <= 127 chars, [%|a-zA-Z0-9_-] -> BadRequest
//   - topics clients may not write (system topics)         -> Forbidden
//   - empty body, body over the size limit, properties over 32767 bytes
//     -> IllegalMessage / BodyTooLarge
//   - unknown topic: auto-created from the default topic (TBW102) when
//     allowed (sendrules.go), else                         -> TopicNotFound
//   - topic not writable                                   -> Forbidden
//   - queue id beyond the topic's queues                   -> BadRequest
//   - a message type the topic's message.type does not take (msgtype.go)
//     -> TypeMismatch
//   - a delay beyond the longest, or otherwise unusable (timer.go)
//     -> BadDeliveryTime
//   - a malformed batch, a batch with a half message or a timer
//     -> IllegalMessage
//   - too many sends waiting for the writer (every front door) -> Busy
// and, from the writer (sendFailure): not master -> NotMaster, in-sync
// replicas not enough -> ReplicasNotEnough, not confirmed by the replicas
// -> ReplicaTimeout, a disk with no room left -> Unavailable, anything
// else -> Internal.
//
// A %RETRY% message past its max reconsume times goes to %DLQ%<group>; a
// message with a delay goes to the timer topic (actors/timer); a half
// message to the half topic (transaction.go).

import (
	"hash/fnv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/actors/txcheck"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// MaxPropertiesSize is RocketMQ's limit on a message's encoded properties.
const MaxPropertiesSize = 32767

// SendRequest is one send: a single message (Body, Properties) or a batch
// (Batch: Body is RocketMQ's batch encoding, each message with its own
// properties).
type SendRequest struct {
	// ProducerGroup is the sender's producer group (PGROUP of a half
	// message when the message does not name one).
	ProducerGroup string
	// Topic is the topic written.
	Topic string
	// DefaultTopic is the topic a missing Topic is created from (TBW102;
	// "": not created, unless a retry or DLQ topic).
	DefaultTopic string
	// DefaultQueueNums bounds the queues of a created topic (0: the
	// default topic's).
	DefaultQueueNums int32
	// QueueID is the queue written; negative: the broker picks one (by
	// MessageGroup when set, else round robin).
	QueueID int32
	// MessageGroup, with a negative QueueID, maps the message to one
	// write queue (FNV-1a): the messages of a group keep their order;
	// others go round robin over the write queues.
	MessageGroup string
	// SysFlag, BornTimestamp, Flag and ReconsumeTimes are stored as sent.
	SysFlag        int32
	BornTimestamp  int64
	Flag           int32
	ReconsumeTimes int32
	// MaxReconsumeTimes, when HasMaxReconsume, bounds the retries of a
	// %RETRY% message (else its group's retryMaxTimes).
	MaxReconsumeTimes int32
	HasMaxReconsume   bool
	// Properties are the single message's encoded properties, decoded
	// only when a rule needs them; Props, when not nil, are the decoded
	// properties instead (the call may modify them).
	Properties []byte
	Props      map[string]string
	// Batch: Body holds several messages.
	Batch bool
	// Body is the message's body (or the batch).
	Body []byte
}

// SendResult is a stored send.
type SendResult struct {
	// QueueID is the queue of the topic asked for (not of the timer or
	// half topic the message may be stored in).
	QueueID int32
	// QueueOffset is the consume-queue offset of the first record (in the
	// queue it was stored in).
	QueueOffset int64
	// Offsets are the CommitLog offsets of the records (their offset
	// message ids, with the broker's advertised address).
	Offsets []int64
	// UniqKeys are the messages' unique keys (their message ids).
	UniqKeys []string
	// RecallDueMs is the due time of a single timer message, for its
	// recall handle (0: not one).
	RecallDueMs int64
	// Half: the message is a transaction's half message (QueueOffset is
	// its offset in the half queue, Offsets[0] its CommitLog offset).
	Half bool
	// Stored is the writer's result: its Out collects the answers of the
	// writer's batch (a codec answering on a connection writes there).
	// On a store failure the done callback gets a SendResult with Stored
	// set and the *Error.
	Stored writer.Result
}

// sendState is what the send calls share.
type sendState struct {
	appends *writer.Inbox
	writer  []*stage.Stage // the stages every send needs
	timers  []*stage.Stage // the stages a timer message needs
	txSts   []*stage.Stage // the stages a half message needs
	txSt    *stage.Stage   // the transaction stage
	topics  *stage.Stage
	// backlog counts appends sent to the writer and not answered (every
	// front door's, the remoting hot path's included).
	backlog atomic.Int64
	rr      atomic.Uint32 // the round robin of sends that let the broker pick the queue
}

func (s *sendState) init(b *Broker) {
	p := b.p
	s.appends = p.Appends()
	s.writer = b.resolve([]string{writer.StageName})
	s.timers = b.resolve(timer.StageNames())
	s.txSts = b.resolve([]string{txcheck.StageName})
	s.txSt = p.Stage(txcheck.StageName)
	s.topics = p.Stage(topics.StageName)
}

// resolve looks stages up by name (names without a stage are skipped).
func (b *Broker) resolve(names []string) []*stage.Stage {
	var out []*stage.Stage
	for _, name := range names {
		if s := b.p.Stage(name); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// WriterBacklog counts the appends sent to the CommitLog writer and not
// answered yet, over every front door (a codec's own fast path adds its
// appends to it).
func (b *Broker) WriterBacklog() *atomic.Int64 { return &b.send.backlog }

// stagesDown refuses a call that needs a stage stopped for good.
func stagesDown(needs []*stage.Stage) *Error {
	for _, s := range needs {
		if d := s.Down(); d != nil {
			return Errorf(Internal, "[STAGE_DOWN]%v", d)
		}
	}
	return nil
}

// Send stores req for c and calls done once with the result or the
// refusal. done runs on the writer's goroutine, the topic stage's, or the
// caller's for a refusal found at once; it must not block.
func (b *Broker) Send(c Caller, req *SendRequest, done func(*SendResult, *Error)) {
	if err := b.authorize(c, pubOn(req.Topic)); err != nil {
		done(nil, err)
		return
	}
	if err := b.startSend(req); err != nil {
		done(nil, err)
		return
	}
	if cfg, ok := b.p.Topics().Get(req.Topic); ok {
		if err := b.sendToTopic(c, req, cfg, nil, done); err != nil {
			done(nil, err)
		}
		return
	}
	auto, ok := b.AutoCreateConfig(req.Topic, req.DefaultTopic, req.DefaultQueueNums)
	if !ok {
		done(nil, Errorf(TopicNotFound, "topic[%s] not exist, apply first please!", req.Topic))
		return
	}
	b.send.topics.Send(&topics.Ensure{Config: auto, Done: func(cfg meta.TopicConfig, err error) {
		if err != nil {
			done(nil, Errorf(Internal, "create topic %s: %v", req.Topic, err))
			return
		}
		if err := b.sendToTopic(c, req, cfg, b.awaitRoute(req.Topic), done); err != nil {
			done(nil, err)
		}
	}})
}

// startSend runs the checks that need no topic configuration.
func (b *Broker) startSend(req *SendRequest) *Error {
	if !b.Ready() {
		return Errorf(Busy, "[STARTING]broker is starting, try again")
	}
	if err := stagesDown(b.send.writer); err != nil {
		return err
	}
	if err := b.DiskFull(); err != nil {
		return err
	}
	if err := meta.ValidateTopic(req.Topic); err != nil {
		return &Error{Status: BadRequest, Remark: err.Error(), Err: err}
	}
	if meta.IsClientWriteForbidden(req.Topic) {
		return Errorf(Forbidden, "sending message to topic[%s] is forbidden", req.Topic)
	}
	return b.checkBody(req)
}

// pubOn is what writing to topic needs of the caller's account.
func pubOn(topic string) Need { return Need{Kind: KindTopic, Name: topic, Perm: Pub} }

// DiskFull refuses a call that would write to the CommitLog while the disk
// is at or above the full ratio, as RocketMQ does (Unavailable with its
// "disk is full" remark). Reads go on.
func (b *Broker) DiskFull() *Error {
	d := b.p.Disk()
	if !d.Full() {
		return nil
	}
	return &Error{Status: Unavailable, Remark: d.FullRemark()}
}

// checkBody enforces the body and properties limits.
func (b *Broker) checkBody(req *SendRequest) *Error {
	if len(req.Body) == 0 {
		return Errorf(IllegalMessage, "message body is empty")
	}
	if limit := b.p.Settings().MaxMessageSize; !req.Batch && len(req.Body) > limit {
		return Errorf(BodyTooLarge, "message body size %d exceeds the limit %d", len(req.Body), limit)
	}
	size := len(req.Properties)
	if req.Props != nil {
		size = propsSize(req.Props)
	}
	if size > MaxPropertiesSize {
		return Errorf(IllegalMessage, "message properties size %d exceeds the limit %d", size, MaxPropertiesSize)
	}
	return nil
}

// propsSize is the size of props encoded.
func propsSize(props map[string]string) int {
	n := 0
	for k, v := range props {
		n += len(k) + len(v) + 2
	}
	return n
}

// sendToTopic runs the checks that need the topic's configuration, builds
// the records and hands them to the writer.
func (b *Broker) sendToTopic(c Caller, req *SendRequest, cfg meta.TopicConfig, gate *routeGate,
	done func(*SendResult, *Error)) *Error {
	if cfg.Perm&meta.PermWrite == 0 {
		return Errorf(Forbidden, "the topic[%s] sending message is forbidden", req.Topic)
	}
	queues := max(cfg.WriteQueueNums, cfg.ReadQueueNums)
	if req.QueueID >= queues {
		return Errorf(BadRequest, "request queueId[%d] is illegal, topic %s has %d queues", req.QueueID, req.Topic, queues)
	}
	queueID := req.QueueID
	if queueID < 0 {
		queueID = pickQueue(cfg.WriteQueueNums, req.MessageGroup, &b.send.rr)
	}
	reqQueue := queueID
	topic := req.Topic
	if dlq, ok := deadLetter(req, b.p.Groups().Get); ok {
		topic, queueID = dlq, 0
		b.p.EnsureGroupTopic(dlq, nil)
	}
	plan := sendPlan{topic: topic, queueID: queueID, sysFlag: req.SysFlag}
	countAs := topic // the topic the send counts under (stats), wherever it is stored
	var props map[string]string
	var lite string // the message's lite topic (litesend.go)
	if req.Batch && message.TransactionType(req.SysFlag) == message.SysFlagTransactionPrepared {
		return Errorf(IllegalMessage, "a batch cannot carry transactional (prepared) messages")
	}
	if req.Batch {
		if err := b.checkBatchTypes(cfg, req.Body); err != nil {
			return err
		}
	}
	if !req.Batch {
		props = req.Props
		if props == nil {
			props = message.DecodeProperties(req.Properties)
		}
		var err *Error
		if lite, err = checkLite(cfg, props, req.SysFlag); err != nil {
			return err
		}
		if lite != "" && plan.topic == req.Topic {
			plan.queueID = pickQueue(cfg.WriteQueueNums, lite, nil)
			reqQueue = plan.queueID
		}
		if err := b.CheckMessageType(cfg, props); err != nil {
			return err
		}
		if q, ok, err := PriorityQueue(cfg, props); err != nil {
			return err
		} else if ok && plan.topic == req.Topic {
			plan.queueID, reqQueue = q, q
		}
		if isHalfMessage(req, props) {
			err = b.toHalfTopic(req, props, &plan, time.Now().UnixMilli())
		} else {
			err = b.applyTimer(props, &plan)
		}
		if err != nil {
			return err
		}
	}
	records, uniqKeys, err := b.buildRecords(c, req, &plan, props)
	if err != nil {
		return err
	}
	if b.send.backlog.Load() >= b.cfg.MaxWriterBacklog {
		return Errorf(Busy, "[REJECTREQUEST]system busy, start flow control for a while")
	}
	answer := func(res writer.Result) {
		out := &SendResult{QueueID: reqQueue, QueueOffset: res.QueueOffset, Offsets: res.Offsets, UniqKeys: uniqKeys,
			RecallDueMs: plan.recallDueMs, Half: plan.half, Stored: res}
		if res.Err != nil {
			done(out, sendFailure(res.Err))
			return
		}
		if lite != "" && len(res.Offsets) == 1 {
			b.liteStored(req.Topic, lite, res.Offsets[0])
		}
		done(out, nil)
	}
	b.send.backlog.Add(1)
	b.send.appends.Push(&writer.Append{
		Key:     writer.QueueKey{Topic: plan.topic, QueueID: plan.queueID},
		Records: records,
		Topic:   countAs, MsgType: plan.msgType(countAs),
		Reply: func(res writer.Result) {
			b.send.backlog.Add(-1)
			if gate != nil && res.Err == nil {
				later := res
				later.Out = nil // the writer's batch is written out by the time the route is there
				if gate.hold(func() { answer(later) }) {
					return
				}
			}
			answer(res)
		},
	})
	return nil
}

// sendPlan is where a send's records go and how they are marked.
type sendPlan struct {
	topic       string
	queueID     int32
	sysFlag     int32
	half        bool
	recallDueMs int64
}

// msgType is the RocketMQ message type a send counts as in the
// statistics: Transaction for a half message, Delay for a message stored
// for the timer (not under countAs, the topic asked for), "" (Normal)
// otherwise.
func (p *sendPlan) msgType(countAs string) string {
	switch {
	case p.half:
		return "Transaction"
	case p.topic != countAs:
		return "Delay"
	}
	return ""
}

// pickQueue chooses a write queue: a message group always maps to the
// same one (FNV-1a of the group), others go round robin.
func pickQueue(writeQueues int32, group string, rr *atomic.Uint32) int32 {
	n := uint32(max(writeQueues, 1))
	if group != "" {
		h := fnv.New32a()
		h.Write([]byte(group))
		return int32(h.Sum32() % n)
	}
	return int32(rr.Add(1) % n)
}

// deadLetter redirects a retry message that exhausted its reconsume times:
// the request's maxReconsumeTimes, else the group's retryMaxTimes.
func deadLetter(req *SendRequest, group func(string) (meta.SubscriptionGroupConfig, bool)) (string, bool) {
	if !strings.HasPrefix(req.Topic, meta.RetryGroupTopicPrefix) {
		return "", false
	}
	groupOf := group
	name := strings.TrimPrefix(req.Topic, meta.RetryGroupTopicPrefix)
	limit := req.MaxReconsumeTimes
	if !req.HasMaxReconsume {
		g, ok := groupOf(name)
		if !ok {
			return "", false
		}
		limit = g.RetryMaxTimes
	}
	if req.ReconsumeTimes <= limit {
		return "", false
	}
	return meta.DLQTopic(name), true
}
