package router

// LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42): the queue locks of orderly
// consumers, kept by the clients stage (actors/clients/locks.go).
//
//   - body missing or malformed, no group or client id -> 29 INVALID_PARAMETER
//   - 41: always 0 SUCCESS with {"lockOKMQSet":[...]}, the queues granted
//     (queues held by another live client are left out)
//   - 42: 0 SUCCESS, no body (also when nothing was held); a oneway 42 gets
//     no answer

import (
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func (r *Router) handleLockBatch(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	body, err := clients.ParseLockBatch(cmd.Body)
	if err != nil {
		return &Refusal{Code: remoting.InvalidParameter, Remark: err.Error()}
	}
	r.clientsSt.Send(&clients.LockBatch{Body: body, ConnID: c.ID(), FailFunc: r.failWith(c, cmd),
		Reply: func(granted []clients.MessageQueue) {
			resp := remoting.NewResponse(cmd, remoting.Success, "")
			resp.Body = clients.FormatLockBatchResponse(granted)
			r.send(c, cmd, resp)
		}})
	return nil
}

func (r *Router) handleUnlockBatch(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	body, err := clients.ParseLockBatch(cmd.Body)
	if err != nil {
		return &Refusal{Code: remoting.InvalidParameter, Remark: err.Error()}
	}
	r.clientsSt.Send(&clients.UnlockBatch{Body: body, FailFunc: r.failWith(c, cmd),
		Done: func() { r.reply(c, cmd, remoting.Success, "") }})
	return nil
}
