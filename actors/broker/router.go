package broker

import (
	"fmt"
	"sync/atomic"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// connState is the broker's per-connection state.
type connState struct {
	inflight atomic.Int64 // sends handed to the writer and not answered
}

// router is the netloop.Handler of the broker port. Its methods run on an
// event loop: they never block.
type router struct{ b *Broker }

var _ netloop.Handler = (*router)(nil)

// OnOpen implements netloop.Handler.
func (r *router) OnOpen(c *netloop.Conn) {
	c.SetContext(&connState{})
	r.b.cfg.Logger.Debug().Str("remote", c.RemoteAddr()).Uint64("conn", c.ID()).Msg("connection opened")
}

// OnClose implements netloop.Handler.
func (r *router) OnClose(c *netloop.Conn, err error) {
	r.b.clientsSt.Send(&clients.Closed{ConnID: c.ID()})
	ev := r.b.cfg.Logger.Debug().Str("remote", c.RemoteAddr()).Uint64("conn", c.ID())
	if err != nil {
		ev = ev.Err(err)
	}
	ev.Msg("connection closed")
}

// OnCommand implements netloop.Handler.
func (r *router) OnCommand(c *netloop.Conn, cmd *remoting.Command) {
	if cmd.IsResponse() {
		return // answers to our oneway notifications: nothing waits for them
	}
	b := r.b
	if !b.ready.Load() {
		// Listening starts before the advertised address (which may depend
		// on the bound port) is known; requests in that window are refused.
		b.reply(c, cmd, remoting.SystemBusy, "[STARTING]broker is starting, try again")
		return
	}
	switch cmd.Code {
	case remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage,
		remoting.SendReplyMessage, remoting.SendReplyMessageV2:
		b.handleSend(c, cmd)
	case remoting.PullMessage:
		b.handlePull(c, cmd)
	case remoting.QueryConsumerOffset:
		b.handleQueryOffset(c, cmd)
	case remoting.UpdateConsumerOffset:
		b.handleUpdateOffset(c, cmd)
	case remoting.GetMaxOffset, remoting.GetMinOffset:
		b.handleQueueBounds(c, cmd)
	case remoting.SearchOffsetByTimestamp:
		b.handleSearchOffset(c, cmd)
	case remoting.HeartBeat:
		b.handleHeartbeat(c, cmd)
	case remoting.UnregisterClient:
		b.handleUnregister(c, cmd)
	case remoting.GetConsumerListByGroup:
		b.handleConsumerList(c, cmd)
	case remoting.UpdateAndCreateTopic:
		b.handleCreateTopic(c, cmd)
	case remoting.DeleteTopicInBroker:
		b.handleDeleteTopic(c, cmd)
	case remoting.GetAllTopicConfig:
		b.handleAllTopicConfig(c, cmd)
	case remoting.ConsumerSendMsgBack:
		b.handleSendBack(c, cmd)
	case remoting.CancelTimerMessage:
		b.handleCancelTimer(c, cmd)
	default:
		b.reply(c, cmd, remoting.RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", cmd.Code))
	}
}

// reply answers cmd with a bare code and remark (unless it is oneway).
func (b *Broker) reply(c *netloop.Conn, cmd *remoting.Command, code int32, remark string) {
	b.send(c, cmd, remoting.NewResponse(cmd, code, remark))
}

// send writes resp unless the request was oneway; a closed connection is
// only logged.
func (b *Broker) send(c *netloop.Conn, req, resp *remoting.Command) {
	if req.IsOneway() {
		return
	}
	if err := c.Send(resp); err != nil {
		b.cfg.Logger.Debug().Err(err).Str("remote", c.RemoteAddr()).Int32("code", req.Code).
			Msg("response not delivered")
	}
}

func connStateOf(c *netloop.Conn) *connState {
	if s, ok := c.Context().(*connState); ok {
		return s
	}
	return &connState{}
}
