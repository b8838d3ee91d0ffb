package router

// RocketMQ 5.3's ACL 2.0 admin requests: AUTH_CREATE_USER (3001),
// AUTH_UPDATE_USER (3002), AUTH_DELETE_USER (3003), AUTH_GET_USER (3004),
// AUTH_LIST_USER (3005), AUTH_CREATE_ACL (3006), AUTH_UPDATE_ACL (3007),
// AUTH_DELETE_ACL (3008), AUTH_GET_ACL (3009), AUTH_LIST_ACL (3010), with
// the headers and bodies of AdminBrokerProcessor (username, subject,
// policyType, resource, filter, subjectFilter, resourceFilter; UserInfo
// and AclInfo JSON), decoded here and served by the broker API
// (actors/broker/acl.go, which the console's Access page calls too).
// Answers never carry a password.
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
// not exist.", and an admin deleting, disabling or demoting itself); a
// failed write is 1 SYSTEM_ERROR and changes nothing.

import (
	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// answerDone is an API call's done that answers its outcome.
func (r *Router) answerDone(c *netloop.Conn, cmd *remoting.Command) func(*broker.Error) {
	return func(err *broker.Error) { r.answer(c, cmd, err) }
}

func (r *Router) handleCreateUser(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	info, err := adminbody.DecodeUserInfo(cmd.Body)
	if err != nil {
		return refuse(remoting.InvalidParameter, "The body is not a UserInfo: %v", err)
	}
	// The header's username is the user's, as in RocketMQ.
	r.core.CreateACLUser(callerOf(c, cmd), cmd.Field("username"), info, r.answerDone(c, cmd))
	return nil
}

func (r *Router) handleUpdateUser(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	info, err := adminbody.DecodeUserInfo(cmd.Body)
	if err != nil {
		return refuse(remoting.InvalidParameter, "The body is not a UserInfo: %v", err)
	}
	r.core.UpdateACLUser(callerOf(c, cmd), cmd.Field("username"), info, r.answerDone(c, cmd))
	return nil
}

func (r *Router) handleDeleteUser(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	r.core.DeleteACLUser(callerOf(c, cmd), cmd.Field("username"), r.answerDone(c, cmd))
	return nil
}

func (r *Router) handleGetUser(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	r.core.ACLUser(callerOf(c, cmd), cmd.Field("username"), func(u *broker.ACLUser, err *broker.Error) {
		switch {
		case err != nil:
			r.refuse(c, cmd, refusalOf(err))
		case u == nil:
			r.reply(c, cmd, remoting.Success, "") // RocketMQ: success, no body
		default:
			body, err := adminbody.EncodeAuth(userInfo(*u))
			r.sendBody(c, cmd, body, err)
		}
	})
	return nil
}

func (r *Router) handleListUsers(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	r.core.ACLUsers(callerOf(c, cmd), cmd.Field("filter"), func(users []broker.ACLUser, err *broker.Error) {
		switch {
		case err != nil:
			r.refuse(c, cmd, refusalOf(err))
		case len(users) == 0:
			r.reply(c, cmd, remoting.Success, "")
		default:
			infos := make([]adminbody.UserInfo, len(users))
			for i, u := range users {
				infos[i] = userInfo(u)
			}
			body, err := adminbody.EncodeAuth(infos)
			r.sendBody(c, cmd, body, err)
		}
	})
	return nil
}

// userInfo is a user as AUTH_GET_USER and AUTH_LIST_USER answer it.
func userInfo(u broker.ACLUser) adminbody.UserInfo {
	return adminbody.UserInfo{Username: u.Name, UserType: u.Type, UserStatus: u.Status}
}

// handlePutACL serves AUTH_CREATE_ACL and AUTH_UPDATE_ACL: RocketMQ treats
// them alike (each merges into an ACL that exists, and creates one that
// does not).
func (r *Router) handlePutACL(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	info, err := adminbody.DecodeAclInfo(cmd.Body)
	if err != nil {
		return refuse(remoting.InvalidParameter, "The body is not an AclInfo: %v", err)
	}
	r.core.PutACL(callerOf(c, cmd), cmd.Field("subject"), info, r.answerDone(c, cmd))
	return nil
}

func (r *Router) handleDeleteACL(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	r.core.DeleteACL(callerOf(c, cmd), cmd.Field("subject"), cmd.Field("policyType"), cmd.Field("resource"), r.answerDone(c, cmd))
	return nil
}

func (r *Router) handleGetACL(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	r.core.ACLOf(callerOf(c, cmd), cmd.Field("subject"), func(a *adminbody.AclInfo, err *broker.Error) {
		switch {
		case err != nil:
			r.refuse(c, cmd, refusalOf(err))
		case a == nil:
			r.reply(c, cmd, remoting.Success, "") // RocketMQ: success, no body
		default:
			body, err := adminbody.EncodeAuth(*a)
			r.sendBody(c, cmd, body, err)
		}
	})
	return nil
}

func (r *Router) handleListACLs(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	r.core.ACLs(callerOf(c, cmd), cmd.Field("subjectFilter"), cmd.Field("resourceFilter"), func(infos []adminbody.AclInfo, err *broker.Error) {
		switch {
		case err != nil:
			r.refuse(c, cmd, refusalOf(err))
		case len(infos) == 0:
			r.reply(c, cmd, remoting.Success, "")
		default:
			body, err := adminbody.EncodeAuth(infos)
			r.sendBody(c, cmd, body, err)
		}
	})
	return nil
}
