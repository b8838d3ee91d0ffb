package registrar

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/recovery"
	"github.com/wheelmq/wheelmq/netloop/nsrvcodec"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// nameServer is the registrar's state for one name server.
type nameServer struct {
	addr string
	tls  *tls.Config // the connection's TLS configuration (nil: plaintext)
	// conn is the open connection, or nil. While busy only the call
	// goroutine touches it; otherwise only the actor.
	conn *remoting.Client
	// busy: a registration call is in flight, carrying the topic table of
	// version sending.
	busy    bool
	sending int64
	// again: another registration was asked for while busy.
	again bool
	// failed: the last registration failed (retried after retryAfter).
	failed bool
	// acked is the topic table version of the last registration the name
	// server acknowledged; -1 when unknown (none yet, or it failed since,
	// or the connection closed: the name server may have restarted).
	acked int64
}

// callDone reports the end of a registration call to the actor.
type callDone struct {
	owner *registrar
	ns    *nameServer
	sent  int64 // the version of the table registered
	err   error
}

// connLost reports that a name-server connection closed.
type connLost struct {
	owner *registrar
	ns    *nameServer
	conn  *remoting.Client
}

// register starts a registration with n, or queues one after the call in
// flight.
func (r *registrar) register(n *nameServer) {
	if n.busy {
		n.again = true
		return
	}
	r.start(n)
}

// errNoBrokerID: the role has no broker id yet (a replicated broker the
// controller has not answered): nothing is registered until it has.
var errNoBrokerID = errors.New("no broker id yet")

// start runs one registration call with n on its own goroutine, with the
// current topic table.
func (r *registrar) start(n *nameServer) {
	req, ver, err := r.request()
	if errors.Is(err, errNoBrokerID) {
		return // the role's kick registers once the controller gave an id
	}
	if err != nil {
		r.opts.Logger.Error().Err(err).Str("namesrv", n.addr).Msg("build register request failed")
		r.settle(n, math.MaxInt64, err)
		return
	}
	n.busy, n.sending = true, ver
	r.wg.Add(1)
	go r.call(n, req, ver)
}

// call is the goroutine of one registration: it ends within Timeout, or
// at once when the stage stops.
func (r *registrar) call(n *nameServer, req *remoting.Command, ver int64) {
	defer r.wg.Done()
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
	defer cancel()
	before := n.conn
	var err error
	if p := recovery.Catch(func() { err = n.invoke(ctx, req, r.opts.Logger) }); p != nil {
		// The call fails with it, and is retried as any failed call.
		recovery.Log(r.opts.Logger, p, "register broker call")
		err = fmt.Errorf("register broker: %w", p)
	}
	if r.ctx.Err() != nil {
		return // stopping: stop() settles the state
	}
	if c := n.conn; c != nil && c != before {
		r.wg.Add(1)
		go r.watch(n, c)
	}
	r.self.Send(&callDone{owner: r, ns: n, sent: ver, err: err})
}

// watch tells the actor when the connection c to n closes; it ends then,
// or when the stage stops.
func (r *registrar) watch(n *nameServer, c *remoting.Client) {
	defer r.wg.Done()
	select {
	case <-c.Done():
		r.self.Send(&connLost{owner: r, ns: n, conn: c})
	case <-r.ctx.Done():
	}
}

// callDone records the outcome of a call and starts the one queued behind
// it.
func (r *registrar) callDone(m *callDone) {
	if m.owner != r {
		return // a call of the actor before a restart
	}
	n := m.ns
	n.busy = false
	log := &r.opts.Logger
	switch {
	case m.err != nil && !n.failed:
		log.Warn().Err(m.err).Str("namesrv", n.addr).Dur("retry_in", retryAfter).Msg("register broker failed")
	case m.err != nil:
		log.Debug().Err(m.err).Str("namesrv", n.addr).Dur("retry_in", retryAfter).Msg("register broker failed again")
	case n.failed:
		log.Info().Str("namesrv", n.addr).Msg("broker registered again after failures")
	default:
		log.Debug().Str("namesrv", n.addr).Msg("broker registered")
	}
	n.failed = m.err != nil
	if n.failed {
		n.acked = -1
		r.retry.Arm(retryAfter, retryFailed{})
	} else {
		n.acked = m.sent
	}
	r.settle(n, m.sent, m.err)
	if n.again || r.waitedOn(n) {
		n.again = false
		r.start(n)
	}
}

// connLost drops a closed connection and registers again soon: the name
// server may have restarted with an empty table.
func (r *registrar) connLost(m *connLost) {
	if m.owner != r {
		return
	}
	n := m.ns
	if n.busy {
		n.acked = -1
		n.again = true // the call in flight may have used it before it closed
		return
	}
	if n.conn != m.conn {
		return // an older connection
	}
	_ = n.conn.Close()
	n.conn, n.acked = nil, -1
	r.opts.Logger.Info().Str("namesrv", n.addr).Dur("register_in", retryAfter).Msg("name server connection closed")
	n.failed = true
	r.retry.Arm(retryAfter, retryFailed{})
}

// request returns the REGISTER_BROKER request for the current topic table,
// built once per table, and the table's version.
func (r *registrar) request() (*remoting.Command, int64, error) {
	t := r.opts.Topics.Load()
	info, epoch := r.current()
	if info.BrokerID < 0 {
		return nil, 0, errNoBrokerID
	}
	if r.req != nil && r.reqFrom == t && r.reqID == info.BrokerID && r.reqEpoch == epoch && r.reqGRPC == info.GRPCEndpoint {
		return r.req, t.Version.Counter, nil
	}
	req, err := nsrvcodec.NewRegisterRequest(info, t.Topics, namesrv.DataVersion{
		StateVersion: epoch, Timestamp: t.Version.Timestamp, Counter: t.Version.Counter,
	})
	if err != nil {
		return nil, 0, err
	}
	if r.reqID != info.BrokerID || r.reqEpoch != epoch {
		r.opts.Logger.Info().Int64("broker_id", info.BrokerID).Int64("master_epoch", epoch).
			Msg("registering with the role's broker id")
	}
	r.reqID, r.reqEpoch, r.reqGRPC = info.BrokerID, epoch, info.GRPCEndpoint
	r.opts.Credentials.Sign(req) // once per table: the copies sent share its fields
	r.req, r.reqFrom = req, t
	return req, t.Version.Counter, nil
}

// invoke sends a copy of req to the name server within ctx, over its open
// connection or a new one; a reused connection that fails is replaced once.
func (n *nameServer) invoke(ctx context.Context, req *remoting.Command, log zerolog.Logger) error {
	for attempt := 0; ; attempt++ {
		c := n.conn
		if c != nil && c.Err() != nil {
			_ = c.Close()
			n.conn, c = nil, nil
		}
		dialed := false
		if c == nil {
			var err error
			if c, err = remoting.Dial(ctx, n.addr, remoting.ClientOptions{Logger: log, TLS: n.tls}); err != nil {
				return fmt.Errorf("dial name server %s: %w", n.addr, err)
			}
			n.conn, dialed = c, true
		}
		cp := *req
		resp, err := c.Invoke(ctx, &cp)
		if err != nil {
			_ = c.Close()
			n.conn = nil
			if !dialed && attempt == 0 && ctx.Err() == nil {
				continue // the kept connection was stale
			}
			return fmt.Errorf("invoke name server %s: %w", n.addr, err)
		}
		if resp.Code != remoting.Success {
			return fmt.Errorf("name server %s answered code %d: %s", n.addr, resp.Code, resp.Remark)
		}
		return nil
	}
}
