package producer

// Failover of a replicated broker group (docs/operations.md, "Replicated
// broker groups"): a send that reached a broker which is no longer its
// group's master (code 14 with a [NOT_MASTER] or fenced remark), or that
// lost its connection to the broker, means the route is stale. Before the
// next attempt the op asks the name servers for the route again, at once
// and then every routePoll, until the failed broker has another address
// (the group's new master registered as brokerId 0) or the route has a
// writable queue elsewhere, for at most the send timeout (and within the
// caller's context). The wait uses no attempt: a send survives a failover
// that takes up to its send timeout with its retries left.

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/netloop/mqclient"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// routePoll is the interval between route lookups while a failover waits.
const routePoll = 50 * time.Millisecond

// notMasterMarks are the remark parts of a code 14 answer from a broker
// that is not its group's master (netloop/router, sendFailure): a replica,
// a promotion under way, a fenced master.
var notMasterMarks = []string{"[NOT_MASTER]", "fenced"}

// staleRoute reports whether err says the route to the attempt's broker is
// stale: a not-master answer, or a failure of the connection (dial,
// write, closed, no answer in time).
func (o *op) staleRoute(err error) bool {
	if o.q.Broker == "" || o.ctxErr() != nil {
		return false
	}
	var be *BrokerError
	if errors.As(err, &be) {
		if be.Code != remoting.ServiceNotAvailable {
			return false
		}
		for _, m := range notMasterMarks {
			if strings.Contains(be.Remark, m) {
				return true
			}
		}
		return false
	}
	var re *routeError
	var ve *ValidationError
	return !errors.As(err, &re) && !errors.As(err, &ve) && !errors.Is(err, errBadSelection) &&
		!errors.Is(err, ErrBadResponse)
}

// failedAt records the broker and address of a stale-route failure, for
// routeMoved.
type failedAt struct{ broker, addr string }

// routeMoved reports whether pub no longer sends to f: the broker has
// another address, or another broker has a writable queue.
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
		lctx, lcancel := context.WithTimeout(ctx, routePoll*4)
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

// awaitRouteAsync (async sends) is awaitRoute off the workers: the route
// is refreshed in the background (RefreshSoon) and checked every
// routePoll from a timer until it moved or until; then the op is posted
// back to the workers for its next attempt.
func (o *op) awaitRouteAsync(f failedAt, until time.Time) {
	time.AfterFunc(routePoll, func() {
		pub, _ := o.p.inst.CachedRoute(o.pr.topic)
		if routeMoved(pub, f) || !time.Now().Before(until) || o.ctx.Err() != nil {
			o.p.post(completion{op: o, retry: true})
			return
		}
		o.p.inst.RefreshSoon(o.pr.topic)
		o.awaitRouteAsync(f, until)
	})
}
