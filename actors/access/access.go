// Package access is the model of who may do what, shared by the checks
// at the ports (netloop/auth, which re-exports it) and the stages that
// hold the accounts (actors/acl's ACL 2.0 users and policies,
// actors/aclfile's plain_acl.yml): permissions, resources, what a request
// needs, accounts and the directories that find them, the plain_acl.yml
// account file (ParsePlainACL, PlainACL; plainacl.go) and the keys a
// process signs its own requests with (Credentials). It does no I/O and
// imports nothing of the broker.
package access

import (
	"net/netip"
	"strings"
)

// Perm is a permission on a topic or group: RocketMQ ACL 1.0's bits
// (acl/common/Permission.java), which ACL 2.0's Pub and Sub actions map
// onto.
type Perm uint8

// The permission bits.
const (
	PermDeny Perm = 1 << 0 // DENY: nothing, whatever else is set
	PermAny  Perm = 1 << 1 // ANY, needed: PUB or SUB owned is enough
	PermPub  Perm = 1 << 2 // PUB: send
	PermSub  Perm = 1 << 3 // SUB: consume, look at
)

// Grants reports whether owned satisfies needed (Permission.checkPermission):
// DENY owned refuses everything; ANY needed takes PUB or SUB; otherwise
// one needed bit must be owned.
func (owned Perm) Grants(needed Perm) bool {
	switch {
	case owned&PermDeny != 0:
		return false
	case needed&PermAny != 0:
		return owned&(PermPub|PermSub) != 0
	default:
		return needed&owned != 0
	}
}

// Kind is what a resource is.
type Kind uint8

// The resource kinds.
const (
	KindTopic Kind = iota + 1
	KindGroup
)

// String names the kind as RocketMQ's remarks do.
func (k Kind) String() string {
	switch k {
	case KindTopic:
		return "topic"
	case KindGroup:
		return "group"
	}
	return "resource"
}

// Need is one permission a request needs on one resource.
type Need struct {
	Kind Kind
	Name string // a topic, or a group (without %RETRY%)
	Perm Perm
}

// Needs is everything a request needs: an admin account, or the listed
// permissions (none: any authenticated account).
type Needs struct {
	Admin     bool
	Resources []Need
	// Deferred, when not 0, is the permission the request needs on the
	// topic of the message it names by id or offset (the timer cancel,
	// END_TRANSACTION, VIEW_MESSAGE_BY_ID): only the handler knows that
	// topic, once it read the message, and checks it then
	// (Guard.CheckDeferred).
	Deferred Perm
}

// Account is one identity of a Directory.
type Account interface {
	// Name is the access key (ACL 1.0) or user name (ACL 2.0).
	Name() string
	// SecretKey is the key its requests are signed with.
	SecretKey() string
	// IsAdmin reports an admin (ACL 2.0: Super) account, which may do
	// everything.
	IsAdmin() bool
	// FromAllowed reports whether the account may be used from ip
	// (plain_acl.yml's whiteRemoteAddress, ACL 2.0's sourceIps): a
	// restriction on top of a valid signature, never a replacement.
	FromAllowed(ip netip.Addr) bool
	// Allows decides one need from ip; rule names the rule that decided
	// (for the refusal's remark and the log; never a secret).
	Allows(n Need, ip netip.Addr) (ok bool, rule string)
}

// Directory finds accounts by access key. Implementations are immutable
// snapshots or otherwise safe for use from any goroutine.
type Directory interface {
	Lookup(accessKey string) (Account, bool)
}

// Union is a Directory that asks each of its directories in turn.
type Union []Directory

// Lookup implements Directory.
func (u Union) Lookup(accessKey string) (Account, bool) {
	for _, d := range u {
		if d == nil {
			continue
		}
		if a, ok := d.Lookup(accessKey); ok {
			return a, true
		}
	}
	return nil, false
}

// GlobalBypass reports whether one of the directories lets ip in without
// a signature (plain_acl.yml's globalWhiteRemoteAddresses, honoured only
// with the IP-bypass compatibility option).
func (u Union) GlobalBypass(ip netip.Addr) bool {
	for _, d := range u {
		if b, ok := d.(GlobalBypasser); ok && b.GlobalBypass(ip) {
			return true
		}
	}
	return false
}

// GlobalBypasser is a Directory with addresses that need no signature
// (plain_acl.yml's globalWhiteRemoteAddresses).
type GlobalBypasser interface{ GlobalBypass(ip netip.Addr) bool }

// PermString names a permission as plain_acl.yml writes it.
func PermString(p Perm) string {
	switch {
	case p&PermDeny != 0:
		return "DENY"
	case p&(PermPub|PermSub) == PermPub|PermSub:
		return "PUB|SUB"
	case p&PermPub != 0:
		return "PUB"
	case p&PermSub != 0:
		return "SUB"
	case p&PermAny != 0:
		return "ANY"
	}
	return "DENY"
}

// parsePerm reads DENY, PUB, SUB, PUB|SUB or SUB|PUB (any case).
func parsePerm(s string) (Perm, bool) {
	switch strings.ToUpper(strings.ReplaceAll(s, " ", "")) {
	case "DENY":
		return PermDeny, true
	case "PUB":
		return PermPub, true
	case "SUB":
		return PermSub, true
	case "PUB|SUB", "SUB|PUB":
		return PermPub | PermSub, true
	}
	return 0, false
}

// Source publishes the Directory in force; safe from any goroutine. The
// number changes whenever the directory does (a connection's cache of
// looked-up accounts is keyed by it).
type Source interface {
	Current() (Directory, uint64)
}
