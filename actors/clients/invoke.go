package clients

import (
	"errors"
	"fmt"
	"time"

	"github.com/wheelmq/wheelmq/actors/stage"
)

// Errors of Invoke, tested with errors.Is.
var (
	// ErrNotOnline means the client is not connected in that group.
	ErrNotOnline = errors.New("clients: consumer not online")
	// ErrCallTimeout means the client did not answer in time.
	ErrCallTimeout = errors.New("clients: client did not answer in time")
	// errStopped fails the calls pending when the stage stops.
	errStopped = errors.New("clients: stage stopped before the client answered")
)

// Invoke sends Request (a Relay of an admin request) to client ClientID
// of consumer group Group (as RocketMQ's broker does for
// GET_CONSUMER_RUNNING_INFO) and calls Reply with the client's answer, or with an error wrapping ErrNotOnline or
// ErrCallTimeout. Reply runs on the stage's goroutine.
type Invoke struct {
	Group    string
	ClientID string
	Request  Push
	Timeout  time.Duration // default 10 s, like Broker2Client.callClient
	Reply    func(Answer, error)
}

// Fail implements stage.Failable.
func (i *Invoke) Fail(err error) { i.Reply(Answer{}, err) }

// CallProducer sends Request (a ReplyMessage) to client ClientID when it is connected as a
// producer (its heartbeat names a producer group), the way RocketMQ's
// ProducerManager.findChannel finds the requester of a request/reply
// message, and calls Reply with the client's answer or with an error
// wrapping ErrNotOnline or ErrCallTimeout. Reply runs on the stage's
// goroutine.
type CallProducer struct {
	ClientID string
	Request  Push
	Timeout  time.Duration // default 10 s, like Broker2Client.callClient
	Reply    func(Answer, error)
}

// Fail implements stage.Failable.
func (p *CallProducer) Fail(err error) { p.Reply(Answer{}, err) }

// Requester records that client ClientID sent a request/reply request (a
// message carrying REPLY_TO_CLIENT) over Conn: CallProducer falls back to
// that connection while the client has not heartbeat yet. The record goes
// with the connection.
type Requester struct {
	ClientID string
	Conn     Conn
}

// NotifyGroup sends Request oneway to every live client of consumer group
// Group, as RocketMQ's Broker2Client.resetOffset sends
// RESET_CONSUMER_CLIENT_OFFSET (ResetOffset) after an admin reset. Reply (may be nil) gets
// the ids of the clients it was written to, sorted.
type NotifyGroup struct {
	Group   string
	Request Push
	Reply   func(sent []string)
	stage.FailFunc
}

// Response is a client's answer to a request the stage sent, matched by
// its opaque; the router forwards every response that arrives on the
// broker port.
type Response struct {
	ConnID uint64
	Opaque int32
	Answer Answer
}

type callTimeout struct{ opaque int32 }

type pendingCall struct {
	connID uint64
	reply  func(Answer, error)
	timer  *stage.Timer
}

// pendingCalls are the requests sent to clients and not yet answered.
type pendingCalls struct {
	self     *stage.Stage
	byOpaque map[int32]*pendingCall
}

func newPendingCalls(self *stage.Stage) *pendingCalls {
	return &pendingCalls{self: self, byOpaque: map[int32]*pendingCall{}}
}

func (m *Manager) invoke(iv *Invoke) {
	c, ok := m.clients[iv.ClientID]
	if ok {
		_, ok = c.groups[iv.Group]
	}
	if !ok {
		iv.Reply(Answer{}, fmt.Errorf("the consumer <%s> <%s> not online: %w", iv.Group, iv.ClientID, ErrNotOnline))
		return
	}
	if err := m.call(c, iv.Request, iv.Timeout, iv.Reply); err != nil {
		iv.Reply(Answer{}, fmt.Errorf("invoke consumer <%s> <%s>: %w", iv.Group, iv.ClientID, err))
	}
}

func (m *Manager) callProducer(cp *CallProducer) {
	c, ok := m.clients[cp.ClientID]
	if !ok || len(c.pgroups) == 0 {
		c, ok = m.requesters[cp.ClientID]
	}
	if !ok {
		cp.Reply(Answer{}, fmt.Errorf("no producer connection of client <%s>: %w", cp.ClientID, ErrNotOnline))
		return
	}
	if err := m.call(c, cp.Request, cp.Timeout, cp.Reply); err != nil {
		cp.Reply(Answer{}, fmt.Errorf("call producer <%s>: %w", cp.ClientID, err))
	}
}

// call sends req to c with a fresh opaque and waits (without
// blocking the stage) for its answer: reply is called once, with the answer
// or with an error, within timeout (default 10 s). An error returned means
// the request was not written and reply will not be called.
func (m *Manager) call(c *client, req Push, timeout time.Duration, reply func(Answer, error)) error {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	m.opaque++
	out := Request{Opaque: m.opaque, Push: req}
	if err := c.conn.Send(out); err != nil {
		return err
	}
	t := m.calls.self.NewTimer()
	t.Arm(timeout, callTimeout{opaque: out.Opaque})
	m.calls.byOpaque[out.Opaque] = &pendingCall{connID: c.conn.ID(), reply: reply, timer: t}
	return nil
}

func (m *Manager) notifyGroup(n *NotifyGroup) {
	var sent []string
	for _, id := range m.members(n.Group) {
		m.opaque++
		if err := m.clients[id].conn.Send(Request{Opaque: m.opaque, Oneway: true, Push: n.Request}); err != nil {
			m.opts.Logger.Debug().Err(err).Str("client", id).Str("group", n.Group).Int32("code", n.Request.Code()).
				Msg("request to consumer not delivered")
			continue
		}
		sent = append(sent, id)
	}
	if n.Reply != nil {
		n.Reply(sent)
	}
}

// answer matches a response to its call; a late or unknown one is dropped.
func (p *pendingCalls) answer(r *Response) {
	call, ok := p.byOpaque[r.Opaque]
	if !ok || call.connID != r.ConnID {
		return
	}
	delete(p.byOpaque, r.Opaque)
	call.timer.Stop()
	call.reply(r.Answer, nil)
}

func (p *pendingCalls) expire(t callTimeout) {
	if call, ok := p.byOpaque[t.opaque]; ok {
		delete(p.byOpaque, t.opaque)
		call.reply(Answer{}, ErrCallTimeout)
	}
}

// dropConn fails the calls waiting on a closed connection.
func (p *pendingCalls) dropConn(connID uint64) {
	for op, call := range p.byOpaque {
		if call.connID == connID {
			delete(p.byOpaque, op)
			call.timer.Stop()
			call.reply(Answer{}, fmt.Errorf("connection closed before the client answered: %w", ErrNotOnline))
		}
	}
}

func (p *pendingCalls) failAll(err error) {
	for op, call := range p.byOpaque {
		delete(p.byOpaque, op)
		call.timer.Stop()
		call.reply(Answer{}, err)
	}
}
