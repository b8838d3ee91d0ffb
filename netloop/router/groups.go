package router

// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// (201), DELETE_SUBSCRIPTIONGROUP (207), and the group checks of pulls and
// send-backs.

import (
	"strconv"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

func (r *Router) handleUpdateGroup(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	cfg, err := meta.DecodeSubscriptionGroupConfig(cmd.Body)
	if err != nil {
		return refuse(remoting.InvalidParameter, "%v", err)
	}
	r.core.PutGroup(callerOf(c, cmd), cfg, func(err *broker.Error) { r.answer(c, cmd, err) })
	return nil
}

func (r *Router) handleAllGroups(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	t := r.groupView.Load()
	body, err := meta.EncodeSubscriptionGroups(t.Groups, t.Version, false)
	if err != nil {
		return &Refusal{Code: remoting.SystemError, Remark: err.Error()}
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	resp.SetField("totalGroupNum", strconv.Itoa(len(t.Groups)))
	resp.Body = body
	r.send(c, cmd, resp)
	return nil
}

func (r *Router) handleDeleteGroup(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	name := p.str("groupName")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	del := func() {
		r.groupsSt.Send(&groups.Delete{Name: name, Done: func(_ bool, err error) {
			if err != nil {
				r.reply(c, cmd, remoting.SystemError, err.Error())
				return
			}
			r.reply(c, cmd, remoting.Success, "")
		}})
	}
	if !parseBool(cmd.Field("cleanOffset")) {
		del()
		return nil
	}
	// The offsets go first: no journal record of them may follow the
	// group's delete record in the log (offsets.DropGroup).
	r.offsetsSt.Send(&offsets.DropGroup{Group: name, Done: del})
	return nil
}
