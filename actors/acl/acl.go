// Package acl is the ACL 2.0 stage: the single owner of a broker's users
// and their access policies, the ones RocketMQ 5.3's admin requests
// AUTH_CREATE_USER ... AUTH_LIST_ACL (3001-3010) manage at run time
// (mqadmin createUser, createAcl, ...; wheelctl user and wheelctl acl).
//
// Users and ACLs live in two JSON files in <data>/acl (file.go), written
// atomically before a change is answered; a change whose write fails
// changes nothing (or, for a user's deletion, only what was written: its
// ACL goes first). The stage publishes an immutable Snapshot after each
// change through View, which is an access.Directory (the one netloop/auth
// checks requests against): the user name is the AccessKey, the password
// the SecretKey, a Super user an admin, a disabled user unknown; the
// entries of its ACL decide what else it may do (directory.go: default
// deny, deny overrides allow).
//
// Readers (the router's AUTH_GET_* and AUTH_LIST_* answers, the request
// checks) never message the stage: they read the snapshot. Passwords are
// kept, because a signature can only be checked with the secret, but they
// are never answered: User.Info leaves them out.
package acl

import (
	"errors"
	"fmt"
	"maps"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// StageName is the stage's stable name.
const StageName = "acl"

// Options configures the stage.
type Options struct {
	// FS is the file system of Dir (storage.Store.FS; nil: the real one).
	FS vfs.FS
	// Dir is the ACL directory, <data>/acl.
	Dir    string
	View   *View
	Logger zerolog.Logger
}

// CreateUser creates a user (AUTH_CREATE_USER); Refused when it exists.
type CreateUser struct {
	User User
	Done func(error)
}

// Fail implements stage.Failable.
func (m *CreateUser) Fail(err error) { m.Done(err) }

// UpdateUser changes a user (AUTH_UPDATE_USER); Refused when it is
// missing.
type UpdateUser struct {
	Change Change
	Done   func(error)
}

// Fail implements stage.Failable.
func (m *UpdateUser) Fail(err error) { m.Done(err) }

// DeleteUser deletes a user and its ACL (AUTH_DELETE_USER); a missing user
// is no error, as in RocketMQ.
type DeleteUser struct {
	Name string
	Done func(error)
}

// Fail implements stage.Failable.
func (m *DeleteUser) Fail(err error) { m.Done(err) }

// PutACL adds policies to a user's ACL, creating it if needed
// (AUTH_CREATE_ACL and AUTH_UPDATE_ACL alike, as in RocketMQ: see
// ACL.merge); Refused when the user is missing.
type PutACL struct {
	ACL  ACL
	Done func(error)
}

// Fail implements stage.Failable.
func (m *PutACL) Fail(err error) { m.Done(err) }

// DeleteACL deletes a user's ACL (AUTH_DELETE_ACL), or with a Resource
// only that entry of the policy type PolicyType (the ACL goes when nothing
// is left). Refused when the user or its ACL is missing.
type DeleteACL struct {
	User       string
	PolicyType string
	Resource   *Resource
	Done       func(error)
}

// Fail implements stage.Failable.
func (m *DeleteACL) Fail(err error) { m.Done(err) }

// RocketMQ's remarks for what does not exist (AuthenticationMetadataManagerImpl,
// AuthorizationMetadataManagerImpl).
const (
	remarkUserExists     = "The user is existed"
	remarkUserMissing    = "The user is not exist"
	remarkSubjectMissing = "The subject is not exist."
	remarkACLMissing     = "The acl is not exist."
)

// Manager is the actor.
type Manager struct {
	opts  Options
	fs    vfs.FS
	users map[string]User
	acls  map[string]ACL
}

// Producer returns the actor producer.
func Producer(opts Options) stage.Producer {
	return func(*stage.Stage) actor.Actor { return &Manager{opts: opts, fs: vfs.Default(opts.FS)} }
}

// Receive implements actor.Actor.
func (m *Manager) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		users, acls, err := load(m.fs, m.opts.Dir, m.opts.Logger)
		if err != nil {
			panic(err) // the supervisor decides; start-up loaded the same files
		}
		m.users, m.acls = users, acls
		m.publish()
	case *CreateUser:
		msg.Done(m.createUser(msg.User))
	case *UpdateUser:
		msg.Done(m.updateUser(msg.Change))
	case *DeleteUser:
		msg.Done(m.deleteUser(msg.Name))
	case *PutACL:
		msg.Done(m.putACL(msg.ACL))
	case *DeleteACL:
		msg.Done(m.deleteACL(msg))
	}
}

func (m *Manager) publish() {
	if m.opts.View != nil {
		m.opts.View.store(newSnapshot(m.users, m.acls))
	}
}

// setUsers persists next as the users, then makes it current.
func (m *Manager) setUsers(next map[string]User) error {
	if err := saveUsers(m.fs, m.opts.Dir, next); err != nil {
		m.opts.Logger.Error().Err(err).Str("dir", m.opts.Dir).Msg("persist ACL users failed: nothing changed")
		return fmt.Errorf("persist ACL users: %w", err)
	}
	m.users = next
	m.publish()
	return nil
}

// setACLs persists next as the ACLs, then makes it current.
func (m *Manager) setACLs(next map[string]ACL) error {
	if err := saveACLs(m.fs, m.opts.Dir, next); err != nil {
		m.opts.Logger.Error().Err(err).Str("dir", m.opts.Dir).Msg("persist ACLs failed: nothing changed")
		return fmt.Errorf("persist ACLs: %w", err)
	}
	m.acls = next
	m.publish()
	return nil
}

func (m *Manager) createUser(u User) error {
	if _, ok := m.users[u.Name]; ok {
		return Refused(remarkUserExists)
	}
	if len(m.users) >= MaxUsers {
		return invalidf("The broker has %d users, the most it keeps", MaxUsers)
	}
	next := maps.Clone(m.users)
	next[u.Name] = u
	if err := m.setUsers(next); err != nil {
		return err
	}
	m.opts.Logger.Info().Str("user", u.Name).Str("type", u.Type).Str("status", u.Status).Msg("ACL user created")
	return nil
}

func (m *Manager) updateUser(c Change) error {
	old, ok := m.users[c.Name]
	if !ok {
		return Refused(remarkUserMissing)
	}
	next := maps.Clone(m.users)
	u := c.apply(old)
	next[c.Name] = u
	if err := m.setUsers(next); err != nil {
		return err
	}
	m.opts.Logger.Info().Str("user", u.Name).Str("type", u.Type).Str("status", u.Status).
		Bool("password_changed", c.Password != "").Msg("ACL user updated")
	return nil
}

func (m *Manager) deleteUser(name string) error {
	if _, ok := m.users[name]; !ok {
		return nil
	}
	if _, ok := m.acls[name]; ok {
		// The ACL first: a crash in between leaves a user without rights,
		// never an ACL waiting for whoever takes the name next.
		next := maps.Clone(m.acls)
		delete(next, name)
		if err := m.setACLs(next); err != nil {
			return err
		}
	}
	next := maps.Clone(m.users)
	delete(next, name)
	if err := m.setUsers(next); err != nil {
		return err
	}
	m.opts.Logger.Info().Str("user", name).Msg("ACL user deleted, with its ACL")
	return nil
}

func (m *Manager) putACL(a ACL) error {
	if _, ok := m.users[a.User]; !ok {
		return Refused(fmt.Sprintf("The subject of %s is not exist.", Subject(a.User)))
	}
	merged := a
	if old, ok := m.acls[a.User]; ok {
		merged = old.merge(a.Policies)
	}
	if n := merged.entries(); n > MaxEntries {
		return invalidf("The ACL of %s would have %d entries, more than %d", Subject(a.User), n, MaxEntries)
	}
	next := maps.Clone(m.acls)
	next[a.User] = merged
	if err := m.setACLs(next); err != nil {
		return err
	}
	m.opts.Logger.Info().Str("subject", Subject(a.User)).Int("entries", merged.entries()).Msg("ACL updated")
	return nil
}

func (m *Manager) deleteACL(d *DeleteACL) error {
	if _, ok := m.users[d.User]; !ok {
		return Refused(remarkSubjectMissing)
	}
	old, ok := m.acls[d.User]
	if !ok {
		return Refused(remarkACLMissing)
	}
	next := maps.Clone(m.acls)
	if d.Resource == nil {
		delete(next, d.User)
	} else {
		rest, found := old.without(d.PolicyType, *d.Resource)
		if !found {
			return nil // nothing to delete: RocketMQ answers success too
		}
		if len(rest.Policies) == 0 {
			delete(next, d.User)
		} else {
			next[d.User] = rest
		}
	}
	if err := m.setACLs(next); err != nil {
		return err
	}
	ev := m.opts.Logger.Info().Str("subject", Subject(d.User))
	if d.Resource != nil {
		ev = ev.Str("policy_type", d.PolicyType).Str("resource", d.Resource.Key())
	}
	ev.Msg("ACL deleted")
	return nil
}

// IsInvalid reports an Invalid error and its remark.
func IsInvalid(err error) (string, bool) {
	var e Invalid
	if errors.As(err, &e) {
		return string(e), true
	}
	return "", false
}

// IsRefused reports a Refused error and its remark.
func IsRefused(err error) (string, bool) {
	var e Refused
	if errors.As(err, &e) {
		return string(e), true
	}
	return "", false
}
