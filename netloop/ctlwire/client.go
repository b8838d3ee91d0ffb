package ctlwire

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/actors/controller/member"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Dialer is the controller member's dialer over remoting clients with
// opts (the broker's signing, TLS and logger).
func Dialer(opts remoting.ClientOptions) member.Dialer {
	return func(ctx context.Context, addr string) (member.Conn, error) {
		c, err := remoting.Dial(ctx, addr, opts)
		if err != nil {
			return nil, err
		}
		return memberConn{c}, nil
	}
}

// memberConn is a member.Conn over one remoting client.
type memberConn struct{ *remoting.Client }

// Heartbeat implements member.Conn.
func (c memberConn) Heartbeat(ctx context.Context, h controller.Heartbeat, timeout time.Duration) (member.Reply, error) {
	return c.invoke(ctx, remoting.NewRequest(remoting.BrokerHeartbeat, HeartbeatFields(h), nil), timeout)
}

// AlterSyncStateSet implements member.Conn.
func (c memberConn) AlterSyncStateSet(ctx context.Context, a controller.AlterRequest, timeout time.Duration) (member.Reply, error) {
	body, err := json.Marshal(a.Set)
	if err != nil {
		return member.Reply{}, fmt.Errorf("encode sync-state set: %w", err)
	}
	fields := map[string]string{
		FieldClusterName: a.Cluster, FieldBrokerName: a.BrokerName,
		FieldMasterBrokerID: strconv.FormatInt(a.MasterID, 10), FieldMasterEpoch: strconv.FormatInt(a.MasterEpoch, 10),
	}
	return c.invoke(ctx, remoting.NewRequest(remoting.ControllerAlterSyncStateSet, fields, body), timeout)
}

// invoke sends req and reads its answer as a member does.
func (c memberConn) invoke(ctx context.Context, req *remoting.Command, timeout time.Duration) (member.Reply, error) {
	resp, err := c.InvokeWithin(ctx, req, timeout)
	if err != nil {
		return member.Reply{}, err
	}
	r := member.Reply{Code: resp.Code, Remark: resp.Remark}
	switch resp.Code {
	case remoting.Success:
		r.Role, r.RoleErr = ParseRoleAnswer(resp)
	case controller.CodeNotLeader:
		r.LeaderAddr = resp.Field(FieldLeaderAddress)
	}
	return r, nil
}
