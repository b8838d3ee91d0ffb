package broker

// ACL 2.0 users and their policies (actors/acl): the calls behind
// AUTH_CREATE_USER ... AUTH_LIST_ACL (3001-3010) and the console's Access
// page. Every one is an admin call. Changes go to the acl stage, which
// persists them before it answers; reads come from its published snapshot.
// No answer ever carries a password.
//
// Statuses: a rule broken (blank or bad name, short password, unknown
// resource type, action, decision, source address) is BadRequest with the
// rule; what RocketMQ refuses with NO_PERMISSION ("The user is existed",
// "The user is not exist", "The subject of User:x is not exist.", "The acl
// is not exist.") is Forbidden with RocketMQ's remark, and so is a caller
// deleting, disabling or demoting its own account (it would lock itself
// out mid-session); a failed write is Internal and changes nothing.

import (
	"github.com/wheelmq/wheelmq/actors/acl"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// ACLUser is one ACL 2.0 user as the API shows it: never its password.
type ACLUser struct {
	Name   string
	Type   string // acl.TypeSuper or acl.TypeNormal
	Status string // acl.StatusEnable or acl.StatusDisable
}

// aclError is the *Error of a refused or failed ACL change.
func aclError(err error) *Error {
	if err == nil {
		return nil
	}
	if remark, ok := acl.IsInvalid(err); ok {
		return &Error{Status: BadRequest, Remark: remark, Err: err}
	}
	if remark, ok := acl.IsRefused(err); ok {
		return &Error{Status: Forbidden, Remark: remark, Err: err}
	}
	return Wrap(Internal, "ACL change", err)
}

// aclChange hands one change to the acl stage: with is its message,
// given the completion it must call (which logs a change made and answers
// done); refused Unavailable while the stage is not running.
func (b *Broker) aclChange(c Caller, what string, done func(*Error), with func(finished func(error)) any) {
	st := b.p.Stage(acl.StageName)
	if st == nil {
		done(Errorf(Unavailable, "the acl stage is not running"))
		return
	}
	st.Send(with(func(err error) {
		if err == nil {
			b.log.Info().Stringer("protocol", c.Protocol).Str("account", c.Account).Stringer("remote", c.Remote).
				Str("what", what).Msg("ACL 2.0 change made")
		}
		done(aclError(err))
	}))
}

// ACLUsers lists the users whose name contains filter ("": all), sorted by
// name (admin).
func (b *Broker) ACLUsers(c Caller, filter string, done func([]ACLUser, *Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(nil, err)
		return
	}
	users := b.p.ACL().Load().Users(filter)
	out := make([]ACLUser, len(users))
	for i, u := range users {
		out[i] = ACLUser{Name: u.Name, Type: u.Type, Status: u.Status}
	}
	done(out, nil)
}

// ACLUser answers one user (nil when there is none) (admin).
func (b *Broker) ACLUser(c Caller, name string, done func(*ACLUser, *Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(nil, err)
		return
	}
	if err := acl.ValidateUsername(name); err != nil {
		done(nil, aclError(err))
		return
	}
	u, ok := b.p.ACL().Load().User(name)
	if !ok {
		done(nil, nil)
		return
	}
	done(&ACLUser{Name: u.Name, Type: u.Type, Status: u.Status}, nil)
}

// CreateACLUser creates a user from info (its password, type and status;
// the name is name, as AUTH_CREATE_USER's header gives it) (admin).
func (b *Broker) CreateACLUser(c Caller, name string, info adminbody.UserInfo, done func(*Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(err)
		return
	}
	u, err := acl.NewUser(name, info)
	if err != nil {
		done(aclError(err))
		return
	}
	b.aclChange(c, "create user "+u.Name, done, func(finished func(error)) any {
		msg := &acl.CreateUser{User: u}
		msg.Done = finished
		return msg
	})
}

// UpdateACLUser changes a user's password, type or status (empty fields
// stay) (admin). A caller may not disable or demote its own account.
func (b *Broker) UpdateACLUser(c Caller, name string, info adminbody.UserInfo, done func(*Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(err)
		return
	}
	ch, err := acl.NewChange(name, info)
	if err != nil {
		done(aclError(err))
		return
	}
	if c.Account != "" && c.Account == ch.Name && (ch.Status == acl.StatusDisable || ch.Type == acl.TypeNormal) {
		if u, ok := b.p.ACL().Load().User(ch.Name); ok && u.Type == acl.TypeSuper {
			done(Errorf(Forbidden, "The user %s may not disable or demote itself: ask another admin", ch.Name))
			return
		}
	}
	b.aclChange(c, "update user "+ch.Name, done, func(finished func(error)) any {
		msg := &acl.UpdateUser{Change: ch}
		msg.Done = finished
		return msg
	})
}

// DeleteACLUser deletes a user and its ACL; a missing user is no error, as
// in RocketMQ (admin). A caller may not delete its own account.
func (b *Broker) DeleteACLUser(c Caller, name string, done func(*Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(err)
		return
	}
	if err := acl.ValidateUsername(name); err != nil {
		done(aclError(err))
		return
	}
	if c.Account != "" && c.Account == name {
		done(Errorf(Forbidden, "The user %s may not delete itself: ask another admin", name))
		return
	}
	b.aclChange(c, "delete user "+name, done, func(finished func(error)) any {
		msg := &acl.DeleteUser{Name: name}
		msg.Done = finished
		return msg
	})
}

// PutACL adds the policies of info to the ACL of subject (the header's
// subject when info has none), creating it; an entry on a resource already
// there replaces it (AUTH_CREATE_ACL and AUTH_UPDATE_ACL alike) (admin).
func (b *Broker) PutACL(c Caller, subject string, info adminbody.AclInfo, done func(*Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(err)
		return
	}
	a, err := acl.ParseACL(subject, info)
	if err != nil {
		done(aclError(err))
		return
	}
	b.aclChange(c, "put ACL of "+acl.Subject(a.User), done, func(finished func(error)) any {
		msg := &acl.PutACL{ACL: a}
		msg.Done = finished
		return msg
	})
}

// DeleteACL deletes the ACL of subject, or with a resource only that entry
// of policyType ("": Custom) (admin).
func (b *Broker) DeleteACL(c Caller, subject, policyType, resource string, done func(*Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(err)
		return
	}
	user, err := acl.ParseSubject(subject)
	if err != nil {
		done(aclError(err))
		return
	}
	typ, err := acl.ParsePolicyType(policyType)
	if err != nil {
		done(aclError(err))
		return
	}
	msg := &acl.DeleteACL{User: user, PolicyType: typ}
	what := "delete ACL of " + acl.Subject(user)
	if resource != "" {
		res, err := acl.ParseResource(resource)
		if err != nil {
			done(aclError(err))
			return
		}
		msg.Resource = &res
		what += " on " + res.Key()
	}
	b.aclChange(c, what, done, func(finished func(error)) any {
		msg.Done = finished
		return msg
	})
}

// ACLOf answers the ACL of subject: nil when the user has none; Forbidden
// ("The subject is not exist.") when there is no such user (admin).
func (b *Broker) ACLOf(c Caller, subject string, done func(*adminbody.AclInfo, *Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(nil, err)
		return
	}
	user, err := acl.ParseSubject(subject)
	if err != nil {
		done(nil, aclError(err))
		return
	}
	snap := b.p.ACL().Load()
	if _, ok := snap.User(user); !ok {
		done(nil, Errorf(Forbidden, "The subject is not exist."))
		return
	}
	a, ok := snap.ACL(user)
	if !ok {
		done(nil, nil)
		return
	}
	info := a.Info()
	done(&info, nil)
}

// ACLs lists the ACLs whose subject contains subjectFilter and that have an
// entry whose resource contains resourceFilter ("": any) (admin).
func (b *Broker) ACLs(c Caller, subjectFilter, resourceFilter string, done func([]adminbody.AclInfo, *Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(nil, err)
		return
	}
	acls := b.p.ACL().Load().ACLs(subjectFilter, resourceFilter)
	out := make([]adminbody.AclInfo, len(acls))
	for i, a := range acls {
		out[i] = a.Info()
	}
	done(out, nil)
}
