package grpcgw

// SendMessage, EndTransaction and RecallMessage: codecs over the broker
// API (actors/broker send.go, transaction.go, recall.go), called in
// process. No remoting command, no loopback socket, no second signature:
// the caller is the verified account and the client's own address (its
// BornHost, its ACL address rules), and every rule (the ACL, limits, the
// message type, the longest delay, topic auto-creation) is the broker's,
// the same for both protocols.

import (
	"context"
	"net"
	"net/netip"
	"strconv"

	"google.golang.org/grpc/peer"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// peerAddr is the address of ctx's client as its connection shows it
// (the zero AddrPort when unknown).
func peerAddr(ctx context.Context) netip.AddrPort {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.AddrPort{}
	}
	if ta, ok := p.Addr.(*net.TCPAddr); ok { // the usual case: no formatting and parsing
		ap := ta.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, err := netip.ParseAddrPort(p.Addr.String())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// callerOf is the broker API's caller of a call of s.
func (g *Gateway) callerOf(ctx context.Context, s *session) broker.Caller {
	return broker.Caller{Protocol: broker.GRPC, Account: s.creds.AccessKey, Remote: peerAddr(ctx), ClientID: s.id}
}

// noCore is the answer of a call that needs the broker API when the
// gateway has none (Options.Broker nil).
func noCore() *v2.Status { return statusf(v2.Code_INTERNAL_SERVER_ERROR, "no broker API") }

// SendMessage stores the messages: several plain messages of one topic
// in one broker call (a batch: sendbatch.go), else one broker call each,
// all made at once and answered together (no round trip between them).
func (g *Gateway) SendMessage(ctx context.Context, req *v2.SendMessageRequest) (*v2.SendMessageResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.SendMessageResponse{Status: st}, nil
	}
	msgs := req.GetMessages()
	if len(msgs) == 0 {
		return &v2.SendMessageResponse{Status: statusf(v2.Code_BAD_REQUEST, "no messages")}, nil
	}
	if batchable(msgs) {
		return g.sendBatch(ctx, s, msgs), nil
	}
	c := g.callerOf(ctx, s)
	entries := make([]*v2.SendResultEntry, len(msgs))
	answered := make(chan struct{}, len(msgs))
	for i, m := range msgs {
		g.sendOne(ctx, s, c, m, func(e *v2.SendResultEntry) {
			entries[i] = e
			answered <- struct{}{}
		})
	}
	for range msgs {
		select {
		case <-answered:
		case <-ctx.Done():
			return &v2.SendMessageResponse{Status: statusf(v2.Code_PROXY_TIMEOUT, "send: %v", ctx.Err())}, nil
		}
	}
	out := &v2.SendMessageResponse{Status: okStatus(), Entries: entries}
	for _, e := range entries {
		if e.Status.GetCode() != v2.Code_OK {
			out.Status = e.Status
			break
		}
	}
	return out, nil
}

// sendOne sends one message; done gets its result entry, once, on the
// stage that stored it (or at once for a refusal).
func (g *Gateway) sendOne(ctx context.Context, s *session, c broker.Caller, m *v2.Message, done func(*v2.SendResultEntry)) {
	msgID := m.GetSystemProperties().GetMessageId()
	fail := func(st *v2.Status) { done(&v2.SendResultEntry{Status: st, MessageId: msgID}) }
	topic := m.GetTopic().GetName()
	f, st := fromMessage(m)
	if st != nil {
		fail(st)
		return
	}
	if f.typ == v2.MessageType_TRANSACTION {
		// The broker asks producer group = topic about open transactions:
		// this client must be registered as one before the half is stored
		// (over its session's remoting connection, which receives the
		// checks: session.go).
		f.props[message.PropProducerGroup] = topic
		if s.register(v2.ClientType_PRODUCER, []string{topic}, "", nil) {
			if err := s.heartbeat(ctx); err != nil {
				fail(internalStatus(err))
				return
			}
		}
	}
	core := g.opts.Broker
	if core == nil {
		fail(noCore())
		return
	}
	core.Send(c, &broker.SendRequest{
		ProducerGroup: topic, Topic: topic, DefaultTopic: broker.AutoCreateTopic, DefaultQueueNums: int32(g.opts.DefaultQueueNums),
		QueueID: -1, MessageGroup: f.group, SysFlag: f.sysFlag, BornTimestamp: f.born, Props: f.props, Body: m.GetBody(),
	}, func(res *broker.SendResult, err *broker.Error) {
		if err != nil {
			fail(fromBroker(err))
			return
		}
		e := &v2.SendResultEntry{Status: okStatus(), MessageId: msgID, Offset: res.QueueOffset}
		if res.RecallDueMs > 0 && len(res.UniqKeys) == 1 {
			e.RecallHandle = remoting.RecallHandle(topic, g.opts.BrokerName, res.RecallDueMs, res.UniqKeys[0])
		}
		if res.Half && len(res.Offsets) == 1 {
			e.TransactionId = encodeTxID(message.OffsetMsgID(core.Advertise(), res.Offsets[0]), strconv.FormatInt(res.QueueOffset, 10))
		}
		done(e)
	})
}

// EndTransaction commits or rolls back a half message.
func (g *Gateway) EndTransaction(ctx context.Context, req *v2.EndTransactionRequest) (*v2.EndTransactionResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.EndTransactionResponse{Status: st}, nil
	}
	if g.opts.Broker == nil {
		return &v2.EndTransactionResponse{Status: noCore()}, nil
	}
	ref, err := decodeTxID(req.GetTransactionId())
	if err != nil {
		return &v2.EndTransactionResponse{Status: statusf(v2.Code_INVALID_TRANSACTION_ID, "%v", err)}, nil
	}
	var commit bool
	switch req.GetResolution() {
	case v2.TransactionResolution_COMMIT:
		commit = true
	case v2.TransactionResolution_ROLLBACK:
	default:
		// Unknown: nothing to do now, the broker asks again.
		return &v2.EndTransactionResponse{Status: okStatus()}, nil
	}
	c := g.callerOf(ctx, s)
	end := &broker.EndRequest{ProducerGroup: req.GetTopic().GetName(), HalfOffset: ref.halfOffset,
		CommitLogOffset: ref.commitLogOffset, Commit: commit,
		FromCheck: req.GetSource() == v2.TransactionSource_SOURCE_SERVER_CHECK}
	answer := make(chan *broker.Error, 1)
	g.opts.Broker.EndTransaction(c, end, func(err *broker.Error) { answer <- err })
	select {
	case err := <-answer:
		return &v2.EndTransactionResponse{Status: fromBroker(err)}, nil
	case <-ctx.Done():
		return &v2.EndTransactionResponse{Status: statusf(v2.Code_PROXY_TIMEOUT, "end transaction: %v", ctx.Err())}, nil
	}
}

// RecallMessage cancels a timer message by its recall handle.
func (g *Gateway) RecallMessage(ctx context.Context, req *v2.RecallMessageRequest) (*v2.RecallMessageResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.RecallMessageResponse{Status: st}, nil
	}
	if g.opts.Broker == nil {
		return &v2.RecallMessageResponse{Status: noCore()}, nil
	}
	topic := req.GetTopic().GetName()
	if req.GetRecallHandle() == "" {
		return &v2.RecallMessageResponse{Status: statusf(v2.Code_BAD_REQUEST, "recall handle is empty")}, nil
	}
	h, err := remoting.ParseRecallHandle(req.GetRecallHandle())
	if err != nil {
		return &v2.RecallMessageResponse{Status: fromBroker(broker.Errorf(broker.BadRequest, "%v", err))}, nil
	}
	c := g.callerOf(ctx, s)
	type recalled struct {
		uniq string
		err  *broker.Error
	}
	answer := make(chan recalled, 1)
	g.opts.Broker.Recall(c, &broker.RecallRequest{Topic: topic, HandleTopic: h.Topic, BrokerName: h.BrokerName, DueMs: h.DueMs, Uniq: h.Uniq},
		func(uniq string, _ writer.Result, err *broker.Error) { answer <- recalled{uniq, err} })
	select {
	case r := <-answer:
		return &v2.RecallMessageResponse{Status: fromBroker(r.err), MessageId: r.uniq}, nil
	case <-ctx.Done():
		return &v2.RecallMessageResponse{Status: statusf(v2.Code_PROXY_TIMEOUT, "recall: %v", ctx.Err())}, nil
	}
}
