package process

// The console's Access and Configuration pages (console.AccessBackend,
// console.ConfigBackend): the broker API's ACL and configuration calls,
// made as the logged-in account, so the API's Authorizer decides (admin
// only) exactly as for the admin requests 3001-3010, 25 and 26.

import (
	"context"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// Accounts lists the ACL 2.0 users with their policies (the API's admin
// check first) and the ACL file's accounts, never a secret.
func (cb *consoleBackend) Accounts(ctx context.Context, c console.Credentials) (console.Accounts, error) {
	var out console.Accounts
	core, err := cb.core()
	if err != nil {
		return out, err
	}
	users, err := await(ctx, func(done func([]broker.ACLUser, *broker.Error)) { core.ACLUsers(cb.caller(c), "", done) })
	if err != nil {
		return out, err
	}
	acls, err := await(ctx, func(done func([]adminbody.AclInfo, *broker.Error)) { core.ACLs(cb.caller(c), "", "", done) })
	if err != nil {
		return out, err
	}
	entries := make(map[string][]console.PolicyEntry, len(acls))
	for _, a := range acls {
		for _, p := range a.Policies {
			for _, e := range p.Entries {
				entries[a.Subject] = append(entries[a.Subject], console.PolicyEntry{PolicyType: p.PolicyType, Resource: e.Resource,
					Actions: e.Actions, SourceIPs: e.SourceIps, Decision: e.Decision})
			}
		}
	}
	for _, u := range users {
		out.Users = append(out.Users, console.ACLUser{Name: u.Name, Type: u.Type, Status: u.Status, Entries: entries["User:"+u.Name]})
	}
	if snap := cb.n.aclView.Load(); snap != nil {
		out.FilePath, out.GlobalWhite = snap.Path, snap.ACL.GlobalWhite()
		for _, a := range snap.ACL.Accounts() {
			out.File = append(out.File, console.FileAccount{AccessKey: a.Name, Admin: a.Admin, White: a.White,
				DefaultTopicPerm: a.DefaultTopicPerm, DefaultGroupPerm: a.DefaultGroupPerm, TopicPerms: a.TopicPerms, GroupPerms: a.GroupPerms})
		}
	}
	return out, nil
}

// aclChange makes one change through the broker API.
func (cb *consoleBackend) aclChange(ctx context.Context, call func(core *broker.Broker, done func(*broker.Error))) error {
	core, err := cb.core()
	if err != nil {
		return err
	}
	return awaitDone(ctx, func(done func(*broker.Error)) { call(core, done) })
}

func (cb *consoleBackend) CreateUser(ctx context.Context, c console.Credentials, name, password, typ string) error {
	info := adminbody.UserInfo{Username: name, Password: password, UserType: typ}
	return cb.aclChange(ctx, func(core *broker.Broker, done func(*broker.Error)) {
		core.CreateACLUser(cb.caller(c), name, info, done)
	})
}

func (cb *consoleBackend) UpdateUser(ctx context.Context, c console.Credentials, name, password, typ, status string) error {
	info := adminbody.UserInfo{Username: name, Password: password, UserType: typ, UserStatus: status}
	return cb.aclChange(ctx, func(core *broker.Broker, done func(*broker.Error)) {
		core.UpdateACLUser(cb.caller(c), name, info, done)
	})
}

func (cb *consoleBackend) DeleteUser(ctx context.Context, c console.Credentials, name string) error {
	return cb.aclChange(ctx, func(core *broker.Broker, done func(*broker.Error)) { core.DeleteACLUser(cb.caller(c), name, done) })
}

func (cb *consoleBackend) PutPolicy(ctx context.Context, c console.Credentials, user string, e console.PolicyEntry) error {
	info := adminbody.AclInfo{Subject: "User:" + user, Policies: []adminbody.PolicyInfo{{PolicyType: e.PolicyType,
		Entries: []adminbody.PolicyEntryInfo{{Resource: e.Resource, Actions: e.Actions, SourceIps: e.SourceIPs, Decision: e.Decision}}}}}
	return cb.aclChange(ctx, func(core *broker.Broker, done func(*broker.Error)) {
		core.PutACL(cb.caller(c), info.Subject, info, done)
	})
}

func (cb *consoleBackend) DeletePolicy(ctx context.Context, c console.Credentials, user, policyType, resource string) error {
	return cb.aclChange(ctx, func(core *broker.Broker, done func(*broker.Error)) {
		core.DeleteACL(cb.caller(c), "User:"+user, policyType, resource, done)
	})
}

// BrokerConfig is broker.Config as the logged-in account.
func (cb *consoleBackend) BrokerConfig(ctx context.Context, c console.Credentials) (console.BrokerConfig, error) {
	core, err := cb.core()
	if err != nil {
		return console.BrokerConfig{}, err
	}
	cfg, err := await(ctx, func(done func(*broker.BrokerConfig, *broker.Error)) { core.Config(cb.caller(c), done) })
	if err != nil {
		return console.BrokerConfig{}, err
	}
	return consoleConfig(cfg), nil
}

// UpdateBrokerConfig is broker.UpdateConfig as the logged-in account.
func (cb *consoleBackend) UpdateBrokerConfig(ctx context.Context, c console.Credentials, values map[string]string) error {
	core, err := cb.core()
	if err != nil {
		return err
	}
	_, err = await(ctx, func(done func(*broker.BrokerConfig, *broker.Error)) { core.UpdateConfig(cb.caller(c), values, done) })
	return err
}

// consoleConfig is the console's copy of a configuration.
func consoleConfig(cfg *broker.BrokerConfig) console.BrokerConfig {
	out := console.BrokerConfig{Version: cfg.Version.Counter, Keys: make([]console.ConfigKey, len(cfg.Keys))}
	for i, k := range cfg.Keys {
		out.Keys[i] = console.ConfigKey{Key: k.Key, Value: k.Value, Changeable: k.Changeable}
	}
	return out
}

// guard is the ACL as the console asks it at login and for what an account
// may read: the ACL file's accounts and the broker's ACL 2.0 users, as on
// the broker's port (nil without access control).
func (cb *consoleBackend) guard() *auth.Guard {
	if cb.n.guard == nil {
		return nil
	}
	return cb.n.guard.ForPort("console", &cb.n.brokerUsers)
}
