package process

// The replication controller embedded in the name server (--controller-listen;
// actors/controller, docs/controller.md) and the broker's role on /healthz.

import (
	"context"
	"fmt"
	"io"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/pipeline"
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
	return nil
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
