package auth

import (
	"net/netip"

	"github.com/wheelmq/wheelmq/actors/access"
)

// The model of who may do what is package actors/access (the stages that
// hold accounts use it without importing the network layer); these names
// are the same types and values.
type (
	// Perm is access.Perm.
	Perm = access.Perm
	// Kind is access.Kind.
	Kind = access.Kind
	// Need is access.Need.
	Need = access.Need
	// Needs is access.Needs.
	Needs = access.Needs
	// Account is access.Account.
	Account = access.Account
	// Directory is access.Directory.
	Directory = access.Directory
	// Union is access.Union.
	Union = access.Union
	// Source is access.Source.
	Source = access.Source
)

// The permission bits and resource kinds (access's).
const (
	PermDeny  = access.PermDeny
	PermAny   = access.PermAny
	PermPub   = access.PermPub
	PermSub   = access.PermSub
	KindTopic = access.KindTopic
	KindGroup = access.KindGroup
)

// PermString names a permission as plain_acl.yml writes it.
func PermString(p Perm) string { return access.PermString(p) }

// globalBypasser is a Directory with addresses that need no signature.
type globalBypasser = access.GlobalBypasser

// bypasser is an Account that may be used without a signature from some
// addresses (plain_acl.yml's whiteRemoteAddress, honoured only with the
// IP-bypass compatibility option).
type bypasser interface{ BypassFrom(ip netip.Addr) bool }

// MaxAccessKeyLen is the longest access key an account has
// (access.MaxAccessKeyLen): a longer one is refused before any look-up.
const MaxAccessKeyLen = access.MaxAccessKeyLen
