package producer

// Failover of a replicated broker group (docs/operations.md, "Replicated
// broker groups"): a send that reached a broker which is no longer its
// group's master (code 14 with a [NOT_MASTER] or fenced remark), or that
// lost its connection to the broker, means the route is stale; a route
// that lists the group's replicas but no master means a failover is under
// way. Before the next attempt the op asks the name servers for the route
// again, at once and then every routePoll, until the failed broker has
// another master address (the promoted replica registered as brokerId 0)
// or the route has a writable queue elsewhere, for at most the send
// timeout (and within the caller's context). The wait itself uses no
// attempt: a send survives a failover that takes up to its send timeout
// with one failed attempt.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/client/mqclient"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// routePoll is the pause between route lookups while a failover waits;
// lookupTimeout bounds one lookup (the name servers tried in turn).
const (
	routePoll     = 50 * time.Millisecond
	lookupTimeout = time.Second
)

// notMasterMarks are the remark parts of a code 14 answer from a broker
// that is not its group's master (netloop/router, sendFailure): a replica,
// a promotion under way, a fenced master.
var notMasterMarks = []string{"[NOT_MASTER]", "fenced"}

// staleRoute reports whether err says the route to the attempt's broker is
// stale: a not-master answer, a failure of the connection (dial, write,
// closed, no answer in time), or a route whose group has no master. It
// returns what failed, for routeMoved.
func (o *op) staleRoute(err error) (failedAt, bool) {
	if o.ctxErr() != nil {
		return failedAt{}, false
	}
	var nm *noMasterError
	if errors.As(err, &nm) {
		return failedAt{broker: nm.broker}, true
	}
	if o.q.Broker == "" {
		return failedAt{}, false
	}
	f := failedAt{o.q.Broker, o.addr}
	var be *BrokerError
	if errors.As(err, &be) {
		if be.Code != remoting.ServiceNotAvailable {
			return f, false
		}
		for _, m := range notMasterMarks {
			if strings.Contains(be.Remark, m) {
				return f, true
			}
		}
		return f, false
	}
	var re *routeError
	var ve *ValidationError
	stale := !errors.As(err, &re) && !errors.As(err, &ve) && !errors.Is(err, errBadSelection) &&
		!errors.Is(err, ErrBadResponse)
	return f, stale
}

// noMasterError is an attempt that found its topic's route without a
// writable queue because its group has no master (replicas only: a
// failover under way). Unlike other route errors it is retried, after
// awaitRoute.
type noMasterError struct {
	broker string
	err    error
}

func (e *noMasterError) Error() string {
	return fmt.Sprintf("broker %s has no master in the route (a failover?): %v", e.broker, e.err)
}
func (e *noMasterError) Unwrap() error { return e.err }

// failedAt records the broker and address of a stale-route failure, for
// routeMoved.
type failedAt struct{ broker, addr string }

// routeMoved reports whether pub no longer sends to f: the broker has
// another master address (any, when f.addr is empty), or another broker
// has a writable queue.
func routeMoved(pub *mqclient.PublishRoute, f failedAt) bool {
	if pub == nil || len(pub.Queues) == 0 {
		return false
	}
	if a, ok := pub.Brokers[f.broker]; ok && a != f.addr {
		return true
	}
	for _, q := range pub.Queues {
		if q.Broker != f.broker {
			return true
		}
	}
	return false
}

// awaitRoute (sync sends) looks the route up until it moved away from f,
// for at most the send timeout within the caller's context. It returns
// the caller's context error if that ended the wait.
func (o *op) awaitRoute(f failedAt) error {
	ctx, cancel := context.WithTimeout(o.ctx, o.p.cfg.sendTimeout)
	defer cancel()
	for {
		lctx, lcancel := context.WithTimeout(ctx, lookupTimeout)
		pub, err := o.p.inst.ReloadRoute(lctx, o.pr.topic)
		lcancel()
		if err == nil && routeMoved(pub, f) {
			return nil
		}
		t := time.NewTimer(routePoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if err := o.ctxErr(); err != nil {
				return err
			}
			return nil // the send timeout: try again on what there is
		}
	}
}

// awaitRouteAsync (async sends) is awaitRoute off the workers: every
// routePoll a timer looks the route up (ReloadRoute: concurrent waiters
// share one lookup) until it moved or until; then the op is posted back to
// the workers for its next attempt.
func (o *op) awaitRouteAsync(f failedAt, until time.Time) {
	time.AfterFunc(routePoll, func() {
		ctx, cancel := context.WithDeadline(o.ctx, until)
		lctx, lcancel := context.WithTimeout(ctx, lookupTimeout)
		pub, err := o.p.inst.ReloadRoute(lctx, o.pr.topic)
		lcancel()
		done := ctx.Err() != nil || (err == nil && routeMoved(pub, f))
		cancel()
		if done {
			o.p.post(completion{op: o, retry: true})
			return
		}
		o.awaitRouteAsync(f, until)
	})
}
