package process

// The replication controller embedded in the name server (--controller-listen;
// actors/controller, docs/controller.md) and the broker's role on /healthz.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/netloop"
)

// startController starts the embedded controller when configured: its
// stage runs next to the name server's, in its actor system and the
// process's stage registry; the name server then checks registrations
// against its master epochs (opts.MasterEpoch).
func (n *Node) startController(opts *namesrv.Options) error {
	if n.cfg.Controller.Listen == "" {
		return nil
	}
	cc := n.cfg.Controller
	cc.Logger = n.cfg.Logger.With().Str("component", "controller").Logger()
	cc.System, cc.Stages = n.nsSystem, n.stages
	if err := n.controllerSecurity(&cc.Security, cc.Logger); err != nil {
		return err
	}
	cc.RemotingAddr = func() string {
		if p := n.nsAddr.Load(); p != nil {
			return *p
		}
		return ""
	}
	ctl, err := controller.Start(cc)
	if err != nil {
		return fmt.Errorf("start controller: %w", err)
	}
	n.ctl = ctl
	opts.MasterEpoch = ctl.MasterEpoch
	if err := n.registry.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "wheelmq_controller_raft_refused_total",
		Help: "Raft connections of the controller refused by its authentication (accepted ones, and dialed ones whose peer failed it).",
	}, func() float64 { return float64(ctl.RaftRefused()) })); err != nil {
		n.cfg.Logger.Warn().Err(err).Msg("controller: raft refusal metric not registered")
	}
	return nil
}

// controllerSecurity fills in what protects the raft port (docs/controller.md,
// "The raft port"): mutual TLS with the process's certificate when the
// ports verify client certificates against a CA (--tls-client-ca) and the
// certificate is the operator's (--tls-cert: self-signed ones chain to no
// common CA), and the cluster secret of ControllerSecretFile; an
// unprotected port is allowed on a loopback address (netloop.LoopbackListen).
func (n *Node) controllerSecurity(sec *controller.RaftSecurity, log zerolog.Logger) error {
	if sec.Loopback == nil {
		sec.Loopback = netloop.LoopbackListen
	}
	if n.tls != nil && n.cfg.TLS.ClientCAFile != "" && n.cfg.TLS.CertFile != "" && sec.TLS == nil {
		sec.TLS = &controller.RaftTLS{Certificate: n.tls.Certificate, CAs: n.tls.ClientCAs}
	}
	if f := n.cfg.ControllerSecretFile; f != "" && sec.Secret == nil {
		secret, err := readSecret("controller secret file", f, controller.MinSecretLen, log)
		if err != nil {
			return err
		}
		sec.Secret = secret
	}
	return nil
}

// readSecret reads a secret file (what names it in messages): its
// content without surrounding whitespace, at least minLen bytes. A file
// others can read is logged.
func readSecret(what, path string, minLen int, log zerolog.Logger) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		log.Warn().Str("file", path).Str("mode", st.Mode().Perm().String()).
			Msg(what + " is readable by other users: chmod 600 it")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	secret := bytes.TrimSpace(b)
	if len(secret) < minLen {
		return nil, fmt.Errorf("%s %s: %d bytes, want at least %d (e.g. openssl rand -hex 32)", what, path, len(secret), minLen)
	}
	return secret, nil
}

// writeControllerSecurity adds a warning to /healthz when the raft port
// is unauthenticated.
func (n *Node) writeControllerSecurity(w io.Writer) {
	if n.ctl == nil {
		return
	}
	switch n.ctl.RaftSecurityMode() {
	case controller.SecurityInsecure:
		_, _ = fmt.Fprintf(w, "warning: controller raft port %s is unauthenticated (--controller-insecure)\n", n.cfg.Controller.Listen)
	case controller.SecurityLoopback:
		_, _ = fmt.Fprintf(w, "warning: controller raft port %s is unauthenticated (loopback only; no --controller-secret-file)\n", n.cfg.Controller.Listen)
	}
}

// stopController stops the embedded controller, if any.
func (n *Node) stopController(ctx context.Context) {
	if n.ctl == nil {
		return
	}
	if err := n.ctl.Stop(ctx); err != nil {
		n.cfg.Logger.Warn().Err(err).Msg("stop controller")
	}
	n.ctl = nil
}

// Controller is the embedded controller (nil if none).
func (n *Node) Controller() *controller.Controller { return n.ctl }

// writeRole adds the broker's replication role to /healthz (controller
// mode only: "role: master epoch=3 fenced=false sync_state_set=[1 2]
// confirmed_offset=1234").
func (n *Node) writeRole(w io.Writer) {
	if n.broker == nil {
		return
	}
	ha := n.broker.Pipeline().HA()
	if ha.Mode == pipeline.ReplicationNone {
		return
	}
	st := ha.Role
	_, _ = fmt.Fprintf(w, "role: %s broker_id=%d replica_id=%d epoch=%d fenced=%t sync_state_set=%v confirmed_offset=%d\n",
		st.Kind, st.BrokerID, st.ReplicaID, st.Epoch, st.Fenced, st.SyncStateSet, ha.Confirmed)
}
