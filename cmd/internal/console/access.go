package console

// The Access page (/access, shown while access control is on): the ACL
// file's accounts (read-only: the file is the operator's) and the broker's
// ACL 2.0 users with their permissions, which an admin creates, changes and
// deletes here through the same broker API calls as the admin requests
// 3001-3010 (so the same refusals). Secrets are never shown: a password is
// typed into a field named "secret", which the change log leaves out.

import (
	"context"
	"net/http"
	"strings"
)

// AccessBackend is what the Access page asks of the broker. Every call is
// an admin call of the broker API: a non-admin account is refused there.
type AccessBackend interface {
	// Accounts lists the ACL file's accounts and the ACL 2.0 users with
	// their policies.
	Accounts(ctx context.Context, c Credentials) (Accounts, error)
	// CreateUser creates an ACL 2.0 user (typ: Normal or Super).
	CreateUser(ctx context.Context, c Credentials, name, password, typ string) error
	// UpdateUser changes a user's password, type or status ("": kept).
	UpdateUser(ctx context.Context, c Credentials, name, password, typ, status string) error
	// DeleteUser deletes a user and its permissions.
	DeleteUser(ctx context.Context, c Credentials, name string) error
	// PutPolicy adds (or replaces, on the same resource) one entry of a
	// user's permissions.
	PutPolicy(ctx context.Context, c Credentials, user string, e PolicyEntry) error
	// DeletePolicy deletes the entry of a user's policy on resource.
	DeletePolicy(ctx context.Context, c Credentials, user, policyType, resource string) error
}

// Accounts are who may sign requests.
type Accounts struct {
	// FilePath is the ACL file; File its accounts, GlobalWhite its
	// globalWhiteRemoteAddresses.
	FilePath    string
	File        []FileAccount
	GlobalWhite []string
	// Users are the ACL 2.0 users.
	Users []ACLUser
}

// FileAccount is one account of the ACL file, without its secret.
type FileAccount struct {
	AccessKey                          string
	Admin                              bool
	White                              string // whiteRemoteAddress ("": any)
	DefaultTopicPerm, DefaultGroupPerm string
	TopicPerms, GroupPerms             []string // "name=PERM"
}

// ACLUser is one ACL 2.0 user, without its password.
type ACLUser struct {
	Name, Type, Status string
	Entries            []PolicyEntry
}

// PolicyEntry is one entry of a user's permissions.
type PolicyEntry struct {
	PolicyType string // Custom or Default
	Resource   string // Topic:orders, Topic:ord*, Group:billing, *
	Actions    []string
	SourceIPs  []string // the addresses it applies from (none: any)
	Decision   string   // Allow or Deny
}

// accessData is the Access page.
type accessData struct {
	A Accounts
}

func (c *Console) accessPage(ctx context.Context, _ *http.Request, ss session, v *view) error {
	v.Title, v.Page = "Access", "access"
	d := &accessData{}
	v.Data = d
	if !c.b.ACL() {
		return nil // the template says access control is off
	}
	var err error
	d.A, err = c.b.Accounts(ctx, ss.creds)
	return err
}

func (c *Console) createUser(ctx context.Context, r *http.Request, ss session) (string, string, error) {
	f := r.PostForm
	name := strings.TrimSpace(f.Get("name"))
	if err := c.b.CreateUser(ctx, ss.creds, name, f.Get("secret"), f.Get("type")); err != nil {
		return "/access", "", err
	}
	return "/access", "user " + name + " created", nil
}

func (c *Console) updateUser(ctx context.Context, r *http.Request, ss session) (string, string, error) {
	f := r.PostForm
	name := f.Get("name")
	if err := c.b.UpdateUser(ctx, ss.creds, name, f.Get("secret"), f.Get("type"), f.Get("status")); err != nil {
		return "/access", "", err
	}
	return "/access", "user " + name + " updated", nil
}

func (c *Console) deleteUser(ctx context.Context, r *http.Request, ss session) (string, string, error) {
	name := r.PostForm.Get("name")
	if err := c.b.DeleteUser(ctx, ss.creds, name); err != nil {
		return "/access", "", err
	}
	return "/access", "user " + name + " deleted, with its permissions", nil
}

func (c *Console) putPolicy(ctx context.Context, r *http.Request, ss session) (string, string, error) {
	f := r.PostForm
	e := PolicyEntry{PolicyType: f.Get("policyType"), Resource: strings.TrimSpace(f.Get("resource")),
		Actions: f["action"], SourceIPs: splitList(f.Get("sourceIps")), Decision: f.Get("decision")}
	user := f.Get("user")
	if err := c.b.PutPolicy(ctx, ss.creds, user, e); err != nil {
		return "/access", "", err
	}
	return "/access", "permission " + e.Resource + " of " + user + " set", nil
}

func (c *Console) deletePolicy(ctx context.Context, r *http.Request, ss session) (string, string, error) {
	f := r.PostForm
	user, res := f.Get("user"), f.Get("resource")
	if err := c.b.DeletePolicy(ctx, ss.creds, user, f.Get("policyType"), res); err != nil {
		return "/access", "", err
	}
	return "/access", "permission " + res + " of " + user + " deleted", nil
}

// splitList reads a list separated by commas, spaces or new lines.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}
