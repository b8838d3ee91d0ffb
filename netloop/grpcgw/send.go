package grpcgw

// SendMessage, EndTransaction and RecallMessage.

import (
	"context"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// RecallMessage is RocketMQ 5.3's RECALL_MESSAGE request code.
const RecallMessage = remoting.RecallMessage

// topicCacheTTL is how long a topic's configuration is reused for sends.
const topicCacheTTL = 3 * time.Second

// roundRobin spreads sends without a message group over the write queues.
type roundRobin struct {
	n     atomic.Uint64
	mu    sync.Mutex
	cache map[string]cachedTopic
}

// cachedTopic is a topic configuration and when it was read.
type cachedTopic struct {
	ti *topicInfo
	at time.Time
}

// sendTopic is topic's configuration for a send, cached briefly.
func (g *Gateway) sendTopic(ctx context.Context, s *session, topic string) (*topicInfo, *v2.Status) {
	now := time.Now()
	g.rr.mu.Lock()
	c, ok := g.rr.cache[topic]
	g.rr.mu.Unlock()
	if ok && now.Sub(c.at) < topicCacheTTL {
		return c.ti, nil
	}
	ti, st := g.topicConfig(ctx, s, topic, true)
	if st != nil {
		return nil, st
	}
	g.rr.mu.Lock()
	if g.rr.cache == nil || len(g.rr.cache) > 4096 {
		g.rr.cache = map[string]cachedTopic{}
	}
	g.rr.cache[topic] = cachedTopic{ti: ti, at: now}
	g.rr.mu.Unlock()
	return ti, nil
}

// pickQueue chooses the queue: a message group always maps to the same
// write queue (FNV-1a of the group), others go round robin.
func (g *Gateway) pickQueue(writeQueues int32, group string) int32 {
	if writeQueues <= 0 {
		return 0
	}
	if group != "" {
		h := fnv.New32a()
		h.Write([]byte(group))
		return int32(h.Sum32() % uint32(writeQueues))
	}
	return int32(g.rr.n.Add(1) % uint64(writeQueues))
}

// SendMessage stores each message through SEND_MESSAGE on a queue the
// gateway picks.
func (g *Gateway) SendMessage(ctx context.Context, req *v2.SendMessageRequest) (*v2.SendMessageResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.SendMessageResponse{Status: st}, nil
	}
	if len(req.GetMessages()) == 0 {
		return &v2.SendMessageResponse{Status: statusf(v2.Code_BAD_REQUEST, "no messages")}, nil
	}
	out := &v2.SendMessageResponse{Status: okStatus()}
	for _, m := range req.GetMessages() {
		e := g.sendOne(ctx, s, m)
		out.Entries = append(out.Entries, e)
		if e.Status.GetCode() != v2.Code_OK && out.Status.GetCode() == v2.Code_OK {
			out.Status = e.Status
		}
	}
	return out, nil
}

// sendOne sends one message and returns its result entry.
func (g *Gateway) sendOne(ctx context.Context, s *session, m *v2.Message) *v2.SendResultEntry {
	fail := func(st *v2.Status) *v2.SendResultEntry {
		return &v2.SendResultEntry{Status: st, MessageId: m.GetSystemProperties().GetMessageId()}
	}
	topic := m.GetTopic().GetName()
	now := time.Now()
	f, st := fromMessage(m, g.opts.MaxMessageSize, now)
	if st != nil {
		return fail(st)
	}
	ti, st := g.sendTopic(ctx, s, topic)
	if st != nil {
		return fail(st)
	}
	typ := f.typ
	if typ == v2.MessageType_MESSAGE_TYPE_UNSPECIFIED {
		typ = typeOf(f.props, f.sysFlag)
	}
	if _, typed := ti.Attributes[topicAttrMessageType]; typed && g.opts.TypeCheck() && !slices.Contains(g.opts.AcceptTypes(ti.Attributes), typ) {
		return fail(statusf(v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "topic %s (message.type %s) does not accept %s messages",
			quote(topic), ti.Attributes[topicAttrMessageType], typ))
	}
	if ti.WriteQueueNums <= 0 || ti.Perm&2 == 0 {
		return fail(statusf(v2.Code_FORBIDDEN, "topic %s is not writable", quote(topic)))
	}
	if typ == v2.MessageType_TRANSACTION {
		// The broker asks producer group = topic about open transactions:
		// this client must be registered as one before the half is stored.
		f.props[message.PropProducerGroup] = topic
		if s.register(v2.ClientType_PRODUCER, []string{topic}, "", nil) {
			if err := s.heartbeat(ctx); err != nil {
				return fail(internalStatus(err))
			}
		}
	}
	qid := g.pickQueue(ti.WriteQueueNums, f.group)
	resp, err := s.invoke(ctx, remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": topic, "topic": topic, "defaultTopic": "TBW102",
		"defaultTopicQueueNums": strconv.Itoa(g.opts.DefaultQueueNums), "queueId": strconv.Itoa(int(qid)),
		"sysFlag": strconv.Itoa(int(f.sysFlag)), "bornTimestamp": strconv.FormatInt(f.born, 10), "flag": "0",
		"properties": string(message.EncodeProperties(f.props)), "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
	}, m.GetBody()))
	if err != nil {
		return fail(internalStatus(err))
	}
	if resp.Code != remoting.Success {
		return fail(fromRemoting(resp, "send"))
	}
	off, _ := strconv.ParseInt(resp.Field("queueOffset"), 10, 64)
	e := &v2.SendResultEntry{Status: okStatus(), MessageId: m.GetSystemProperties().GetMessageId(), Offset: off,
		RecallHandle: resp.Field("recallHandle")}
	if typ == v2.MessageType_TRANSACTION {
		e.TransactionId = encodeTxID(resp.Field("msgId"), resp.Field("queueOffset"))
	}
	return e
}

// EndTransaction commits or rolls back a half message (END_TRANSACTION).
func (g *Gateway) EndTransaction(ctx context.Context, req *v2.EndTransactionRequest) (*v2.EndTransactionResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.EndTransactionResponse{Status: st}, nil
	}
	ref, err := decodeTxID(req.GetTransactionId())
	if err != nil {
		return &v2.EndTransactionResponse{Status: statusf(v2.Code_INVALID_TRANSACTION_ID, "%v", err)}, nil
	}
	kind := "0"
	switch req.GetResolution() {
	case v2.TransactionResolution_COMMIT:
		kind = strconv.Itoa(int(message.SysFlagTransactionCommit))
	case v2.TransactionResolution_ROLLBACK:
		kind = strconv.Itoa(int(message.SysFlagTransactionRollback))
	}
	topic := req.GetTopic().GetName()
	cmd := remoting.NewRequest(remoting.EndTransaction, map[string]string{
		"producerGroup": topic, "tranStateTableOffset": strconv.FormatInt(ref.halfOffset, 10),
		"commitLogOffset": strconv.FormatInt(ref.commitLogOffset, 10), "commitOrRollback": kind,
		"fromTransactionCheck": strconv.FormatBool(req.GetSource() == v2.TransactionSource_SOURCE_SERVER_CHECK),
		"msgId":                req.GetMessageId(), "transactionId": req.GetMessageId(),
	}, nil)
	if kind == "0" {
		// Unknown: nothing to do now, the broker asks again (and never
		// answers such a request).
		c, err := s.conn(ctx)
		if err == nil {
			err = c.InvokeOneway(cmd)
		}
		if err != nil {
			return &v2.EndTransactionResponse{Status: internalStatus(err)}, nil
		}
		return &v2.EndTransactionResponse{Status: okStatus()}, nil
	}
	resp, err := s.invoke(ctx, cmd)
	if err != nil {
		return &v2.EndTransactionResponse{Status: internalStatus(err)}, nil
	}
	return &v2.EndTransactionResponse{Status: fromRemoting(resp, "end transaction")}, nil
}

// RecallMessage cancels a timer message by its recall handle
// (RECALL_MESSAGE 370).
func (g *Gateway) RecallMessage(ctx context.Context, req *v2.RecallMessageRequest) (*v2.RecallMessageResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.RecallMessageResponse{Status: st}, nil
	}
	topic := req.GetTopic().GetName()
	if req.GetRecallHandle() == "" {
		return &v2.RecallMessageResponse{Status: statusf(v2.Code_BAD_REQUEST, "recall handle is empty")}, nil
	}
	resp, err := s.invoke(ctx, remoting.NewRequest(RecallMessage, map[string]string{
		"producerGroup": topic, "topic": topic, "recallHandle": req.GetRecallHandle(),
	}, nil))
	if err != nil {
		return &v2.RecallMessageResponse{Status: internalStatus(err)}, nil
	}
	st = fromRemoting(resp, "recall")
	if resp.Code == remoting.RequestCodeNotSupported {
		st = statusf(v2.Code_NOT_IMPLEMENTED, "this broker does not serve RECALL_MESSAGE yet: %s", resp.Remark)
	}
	return &v2.RecallMessageResponse{Status: st, MessageId: resp.Field("msgId")}, nil
}
