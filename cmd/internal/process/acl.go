package process

// Access control of the process's ports (docs/operations.md, "Access
// control"): one ACL file, one stage that watches it (actors/aclfile), one
// Guard per port sharing its counters. In the all-in-one mode the broker
// registers with its embedded name server with an internal credential:
// made from crypto/rand at every start, kept in memory only, known to the
// embedded name server's port only (the broker's port does not accept
// it), and admin there, as registration needs. The broker's ACL 2.0
// users (actors/acl, managed with 3001-3010) are accounts on both ports,
// asked before the file's.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/actors/access"
	"github.com/wheelmq/wheelmq/actors/acl"
	"github.com/wheelmq/wheelmq/actors/aclfile"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// ACLConfig turns access control on for every port of the process.
type ACLConfig struct {
	// File is the plain_acl.yml (RocketMQ ACL 1.0 format); "" leaves
	// every port open, as RocketMQ without aclEnable.
	File string
	// IPBypass is RocketMQ's IP whitelist rule, for compatibility only:
	// whitelisted addresses need no signature (see auth.GuardOptions).
	IPBypass bool
	// Interval is how often the file is looked at (0: 1 s).
	Interval time.Duration
}

// startACL loads the ACL file (a bad one fails the start, with every
// problem and its line), starts the stage that reloads it and makes the
// Guard of the process's ports.
func (n *Node) startACL() error {
	c := n.cfg.ACL
	log := n.cfg.Logger.With().Str("component", "acl").Logger()
	snap, err := aclfile.Load(c.File)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	n.aclView.Init(snap)
	for _, w := range snap.ACL.Warnings {
		log.Warn().Str("path", c.File).Str("warning", w).Msg("ACL file")
	}
	n.aclSystem = stage.NewSystem(log)
	strategy := supervisor.New(supervisor.Policy{Logger: log, OnRestart: n.stages.Restarted, Retire: n.stages.Retire})
	st, err := n.stages.Spawn(n.aclSystem, strategy, aclfile.StageName, aclfile.Producer(aclfile.Options{
		Path: c.File, View: &n.aclView, Interval: c.Interval, Metrics: aclfile.NewMetrics(n.registry), Logger: log,
		Keep: []access.Credentials{n.cfg.Broker.RegisterCredentials},
	}))
	if err != nil {
		n.aclSystem.Shutdown()
		n.aclSystem = nil
		return fmt.Errorf("start ACL stage: %w", err)
	}
	n.aclStage = st
	n.guard = auth.NewGuard(auth.GuardOptions{Source: &n.aclView, IPBypass: c.IPBypass, Logger: log, Registerer: n.registry})
	log.Info().Str("path", c.File).Int("accounts", snap.ACL.Len()).Bool("ip_bypass", c.IPBypass).
		Msg("access control on: every request must be signed by an account with what it needs")
	if !loopbackOnly(n.cfg.MetricsListen) {
		log.Warn().Str("metrics_listen", n.cfg.MetricsListen).Bool("pprof", n.cfg.Pprof).
			Msg("the HTTP endpoint is not on a loopback address while access control is on: /metrics and /healthz (and /debug/pprof with --pprof) answer anyone who reaches it, unsigned")
	}
	return nil
}

// loopbackOnly reports whether an HTTP listen address is empty (off) or
// binds a loopback address only.
func loopbackOnly(listen string) bool { return listen == "" || netloop.LoopbackListen(listen) }

func (n *Node) stopACL() {
	if n.aclStage != nil {
		n.aclStage.Stop()
	}
	if n.aclSystem != nil {
		n.aclSystem.Shutdown()
	}
}

// lateUsers is a Source of the broker's ACL 2.0 users (actors/acl), set
// once the broker runs (before: none).
type lateUsers struct{ v atomic.Pointer[acl.View] }

func (l *lateUsers) set(v *acl.View) { l.v.Store(v) }

// Current implements auth.Source.
func (l *lateUsers) Current() (auth.Directory, uint64) {
	v := l.v.Load()
	if v == nil {
		return auth.Union(nil), 0
	}
	return v.Current()
}

// newInternalCredential makes the embedded broker's credential towards
// the embedded name server.
func newInternalCredential() (auth.Credentials, auth.Directory, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return auth.Credentials{}, nil, fmt.Errorf("internal credential: %w", err)
	}
	key := hex.EncodeToString(b[:])
	c := auth.Credentials{AccessKey: "wheelmq-internal-" + key[:16], SecretKey: key[16:]}
	return c, internalDir{internalAccount{c.AccessKey, c.SecretKey}}, nil
}

// internalDir is the directory of the internal credential.
type internalDir struct{ a internalAccount }

// Lookup implements auth.Directory.
func (d internalDir) Lookup(accessKey string) (auth.Account, bool) {
	if accessKey == d.a.name {
		return d.a, true
	}
	return nil, false
}

// internalAccount is the internal credential's account: admin on the
// embedded name server's port, from any address (the secret is the
// proof; the broker may reach the name server by any of its addresses).
type internalAccount struct{ name, secret string }

// Name implements auth.Account.
func (a internalAccount) Name() string { return a.name }

// SecretKey implements auth.Account.
func (a internalAccount) SecretKey() string { return a.secret }

// IsAdmin implements auth.Account.
func (a internalAccount) IsAdmin() bool { return true }

// FromAllowed implements auth.Account.
func (a internalAccount) FromAllowed(netip.Addr) bool { return true }

// Allows implements auth.Account.
func (a internalAccount) Allows(auth.Need, netip.Addr) (bool, string) {
	return true, "internal credential"
}
