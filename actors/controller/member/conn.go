package member

import (
	"context"
	"time"

	"github.com/wheelmq/wheelmq/actors/controller"
)

// Conn is one connection to a controller, kept across calls: its close
// tells the controller this broker died. netloop/ctlwire implements it
// over a remoting client. Its calls are made by one goroutine at a time.
type Conn interface {
	// Addr is the controller's address the connection was dialed to.
	Addr() string
	// Done is closed when the connection is gone.
	Done() <-chan struct{}
	// Close closes the connection.
	Close() error
	// Heartbeat sends one BROKER_HEARTBEAT and waits (bounded by ctx and
	// timeout) for its answer; the error is the call's (a timeout, a
	// closed connection), a refusal is a Reply.
	Heartbeat(ctx context.Context, h controller.Heartbeat, timeout time.Duration) (Reply, error)
	// AlterSyncStateSet proposes a sync-state set
	// (CONTROLLER_ALTER_SYNC_STATE_SET), as Heartbeat.
	AlterSyncStateSet(ctx context.Context, a controller.AlterRequest, timeout time.Duration) (Reply, error)
}

// Dialer opens a Conn to a controller's address, bounded by ctx.
type Dialer func(ctx context.Context, addr string) (Conn, error)

// Reply is a controller's answer as a member reads it: Code (0: success)
// and Remark; on CONTROLLER_NOT_LEADER the leader's address the follower
// named ("" unknown); on success the role it told (RoleErr: the answer's
// role did not decode).
type Reply struct {
	Code       int32
	Remark     string
	LeaderAddr string
	Role       controller.RoleAnswer
	RoleErr    error
}
