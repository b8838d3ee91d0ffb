package clients

import (
	"errors"
	"fmt"
	"time"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/netloop/remoting"
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

// Invoke sends Request to client ClientID of consumer group Group (as
// RocketMQ's broker does for GET_CONSUMER_RUNNING_INFO) and calls Reply
// with the client's answer, or with an error wrapping ErrNotOnline or
// ErrCallTimeout. Reply runs on the stage's goroutine.
type Invoke struct {
	Group    string
	ClientID string
	Request  *remoting.Command
	Timeout  time.Duration // default 10 s, like Broker2Client.callClient
	Reply    func(*remoting.Command, error)
}

// Fail implements stage.Failable.
func (i *Invoke) Fail(err error) { i.Reply(nil, err) }

// Response is a client's answer to a request the stage sent; the router
// forwards every response that arrives on the broker port.
type Response struct {
	ConnID uint64
	Cmd    *remoting.Command
}

type callTimeout struct{ opaque int32 }

type pendingCall struct {
	connID uint64
	reply  func(*remoting.Command, error)
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
		iv.Reply(nil, fmt.Errorf("the consumer <%s> <%s> not online: %w", iv.Group, iv.ClientID, ErrNotOnline))
		return
	}
	timeout := iv.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	m.opaque++
	req := *iv.Request
	req.Opaque, req.Flag = m.opaque, 0
	if err := c.conn.Send(&req); err != nil {
		iv.Reply(nil, fmt.Errorf("invoke consumer <%s> <%s>: %w", iv.Group, iv.ClientID, err))
		return
	}
	t := m.calls.self.NewTimer()
	t.Arm(timeout, callTimeout{opaque: req.Opaque})
	m.calls.byOpaque[req.Opaque] = &pendingCall{connID: c.conn.ID(), reply: iv.Reply, timer: t}
}

// answer matches a response to its call; a late or unknown one is dropped.
func (p *pendingCalls) answer(r *Response) {
	call, ok := p.byOpaque[r.Cmd.Opaque]
	if !ok || call.connID != r.ConnID {
		return
	}
	delete(p.byOpaque, r.Cmd.Opaque)
	call.timer.Stop()
	call.reply(r.Cmd, nil)
}

func (p *pendingCalls) expire(t callTimeout) {
	if call, ok := p.byOpaque[t.opaque]; ok {
		delete(p.byOpaque, t.opaque)
		call.reply(nil, ErrCallTimeout)
	}
}

// dropConn fails the calls waiting on a closed connection.
func (p *pendingCalls) dropConn(connID uint64) {
	for op, call := range p.byOpaque {
		if call.connID == connID {
			delete(p.byOpaque, op)
			call.timer.Stop()
			call.reply(nil, fmt.Errorf("connection closed before the client answered: %w", ErrNotOnline))
		}
	}
}

func (p *pendingCalls) failAll(err error) {
	for op, call := range p.byOpaque {
		delete(p.byOpaque, op)
		call.timer.Stop()
		call.reply(nil, err)
	}
}
