package router

// RocketMQ 5.3's ACL 2.0 admin requests: AUTH_CREATE_USER (3001),
// AUTH_UPDATE_USER (3002), AUTH_DELETE_USER (3003), AUTH_GET_USER (3004),
// AUTH_LIST_USER (3005), AUTH_CREATE_ACL (3006), AUTH_UPDATE_ACL (3007),
// AUTH_DELETE_ACL (3008), AUTH_GET_ACL (3009), AUTH_LIST_ACL (3010), with
// the headers and bodies of AdminBrokerProcessor (username, subject,
// policyType, resource, filter, subjectFilter, resourceFilter; UserInfo
// and AclInfo JSON). Changes go to the acl stage, which persists them
// before it answers; reads come from its published snapshot. Answers
// never carry a password.
//
// These are admin requests: the request checks' permission table marks
// 3001-3010 as needing an admin account (a plain_acl.yml admin or an ACL
// 2.0 Super user); this file assumes the caller passed that check.
//
// Codes: a rule broken (blank or bad name, short password, unknown
// resource type, action, decision, source address) is 29
// INVALID_PARAMETER with the rule; what RocketMQ refuses with 16
// NO_PERMISSION keeps its code and remark ("The user is existed", "The
// user is not exist", "The subject of User:x is not exist.", "The acl is
// not exist."); a failed write is 1 SYSTEM_ERROR and changes nothing.

import (
	"github.com/wheelmq/wheelmq/actors/acl"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// aclDone answers a change with the stage's outcome.
func (r *Router) aclDone(c *netloop.Conn, cmd *remoting.Command, what string) func(error) {
	return func(err error) {
		if err == nil {
			r.log.Info().Str("remote", c.RemoteAddr()).Int32("request_code", cmd.Code).Str("what", what).
				Msg("ACL 2.0 change made")
			r.reply(c, cmd, remoting.Success, "")
			return
		}
		r.refuse(c, cmd, aclRefusal(err))
	}
}

// aclRefusal is the answer to a refused or failed ACL request.
func aclRefusal(err error) *Refusal {
	if remark, ok := acl.IsInvalid(err); ok {
		return &Refusal{Code: remoting.InvalidParameter, Remark: remark}
	}
	if remark, ok := acl.IsRefused(err); ok {
		return &Refusal{Code: remoting.NoPermission, Remark: remark}
	}
	return &Refusal{Code: remoting.SystemError, Remark: err.Error()}
}

// aclStage is the acl stage (the route's needs refused the request if it
// is down).
func (r *Router) aclStage() *stage.Stage { return r.p.Stage(acl.StageName) }

func (r *Router) handleCreateUser(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	info, err := adminbody.DecodeUserInfo(cmd.Body)
	if err != nil {
		return refuse(remoting.InvalidParameter, "The body is not a UserInfo: %v", err)
	}
	// The header's username is the user's, as in RocketMQ.
	u, err := acl.NewUser(cmd.Field("username"), info)
	if err != nil {
		return aclRefusal(err)
	}
	r.aclStage().Send(&acl.CreateUser{User: u, Done: r.aclDone(c, cmd, "create user "+u.Name)})
	return nil
}

func (r *Router) handleUpdateUser(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	info, err := adminbody.DecodeUserInfo(cmd.Body)
	if err != nil {
		return refuse(remoting.InvalidParameter, "The body is not a UserInfo: %v", err)
	}
	ch, err := acl.NewChange(cmd.Field("username"), info)
	if err != nil {
		return aclRefusal(err)
	}
	r.aclStage().Send(&acl.UpdateUser{Change: ch, Done: r.aclDone(c, cmd, "update user "+ch.Name)})
	return nil
}

func (r *Router) handleDeleteUser(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	name := cmd.Field("username")
	if err := acl.ValidateUsername(name); err != nil {
		return aclRefusal(err)
	}
	r.aclStage().Send(&acl.DeleteUser{Name: name, Done: r.aclDone(c, cmd, "delete user "+name)})
	return nil
}

func (r *Router) handleGetUser(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	name := cmd.Field("username")
	if err := acl.ValidateUsername(name); err != nil {
		return aclRefusal(err)
	}
	u, ok := r.p.ACL().Load().User(name)
	if !ok {
		r.reply(c, cmd, remoting.Success, "") // RocketMQ: success, no body
		return nil
	}
	body, err := adminbody.EncodeAuth(u.Info())
	r.sendBody(c, cmd, body, err)
	return nil
}

func (r *Router) handleListUsers(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	users := r.p.ACL().Load().Users(cmd.Field("filter"))
	if len(users) == 0 {
		r.reply(c, cmd, remoting.Success, "")
		return nil
	}
	infos := make([]adminbody.UserInfo, len(users))
	for i, u := range users {
		infos[i] = u.Info()
	}
	body, err := adminbody.EncodeAuth(infos)
	r.sendBody(c, cmd, body, err)
	return nil
}

// handlePutACL serves AUTH_CREATE_ACL and AUTH_UPDATE_ACL: RocketMQ treats
// them alike (each merges into an ACL that exists, and creates one that
// does not).
func (r *Router) handlePutACL(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	info, err := adminbody.DecodeAclInfo(cmd.Body)
	if err != nil {
		return refuse(remoting.InvalidParameter, "The body is not an AclInfo: %v", err)
	}
	a, err := acl.ParseACL(cmd.Field("subject"), info)
	if err != nil {
		return aclRefusal(err)
	}
	r.aclStage().Send(&acl.PutACL{ACL: a, Done: r.aclDone(c, cmd, "put ACL of "+acl.Subject(a.User))})
	return nil
}

func (r *Router) handleDeleteACL(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	user, err := acl.ParseSubject(cmd.Field("subject"))
	if err != nil {
		return aclRefusal(err)
	}
	typ, err := acl.ParsePolicyType(cmd.Field("policyType"))
	if err != nil {
		return aclRefusal(err)
	}
	msg := &acl.DeleteACL{User: user, PolicyType: typ}
	what := "delete ACL of " + acl.Subject(user)
	if key := cmd.Field("resource"); key != "" {
		res, err := acl.ParseResource(key)
		if err != nil {
			return aclRefusal(err)
		}
		msg.Resource = &res
		what += " on " + res.Key()
	}
	msg.Done = r.aclDone(c, cmd, what)
	r.aclStage().Send(msg)
	return nil
}

func (r *Router) handleGetACL(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	user, err := acl.ParseSubject(cmd.Field("subject"))
	if err != nil {
		return aclRefusal(err)
	}
	snap := r.p.ACL().Load()
	if _, ok := snap.User(user); !ok {
		return refuse(remoting.NoPermission, "The subject is not exist.")
	}
	a, ok := snap.ACL(user)
	if !ok {
		r.reply(c, cmd, remoting.Success, "") // RocketMQ: success, no body
		return nil
	}
	body, err := adminbody.EncodeAuth(a.Info())
	r.sendBody(c, cmd, body, err)
	return nil
}

func (r *Router) handleListACLs(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	acls := r.p.ACL().Load().ACLs(cmd.Field("subjectFilter"), cmd.Field("resourceFilter"))
	if len(acls) == 0 {
		r.reply(c, cmd, remoting.Success, "")
		return nil
	}
	infos := make([]adminbody.AclInfo, len(acls))
	for i, a := range acls {
		infos[i] = a.Info()
	}
	body, err := adminbody.EncodeAuth(infos)
	r.sendBody(c, cmd, body, err)
	return nil
}
