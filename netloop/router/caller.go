package router

import (
	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// callerOf is the broker API's Caller of a remoting request: the
// connection's peer, the signing account, and Checked, since OnCommand
// checked the request against the ACL before its handler ran (authz.go).
func callerOf(c *netloop.Conn, cmd *remoting.Command) broker.Caller {
	return broker.Caller{Protocol: broker.Remoting, Account: cmd.Field("AccessKey"), Remote: c.RemoteAddrPort(), Checked: true}
}

// answer writes the answer of an API call that returns nothing but its
// outcome: SUCCESS, or the error's code and remark.
func (r *Router) answer(c *netloop.Conn, cmd *remoting.Command, err *broker.Error) {
	if err != nil {
		r.reply(c, cmd, wireCode(err.Status), err.Remark)
		return
	}
	r.reply(c, cmd, remoting.Success, "")
}
