package controller

import (
	"fmt"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/actors/wirecode"
)

// StageName is the stable name of the controller's stage (its actor id and
// the stage label of its wheelmq_actor_* metrics).
const StageName = "controller"

// request is one controller request on its way to the stage (Handle).
type request struct {
	req      Request
	conn     uint64
	reply    func(Answer)
	answered atomic.Bool
}

// send answers the request once; later answers are dropped (nil reply:
// every answer is, as to a oneway request).
func (r *request) send(a Answer) {
	if !r.answered.CompareAndSwap(false, true) {
		return
	}
	if r.reply != nil {
		r.reply(a)
	}
}

// Fail implements stage.Failable: a request the stage failed while serving
// (or that reached a stage stopped for good) is answered SYSTEM_ERROR,
// unless it was answered already.
func (r *request) Fail(err error) {
	r.send(refuse(wirecode.SystemError, "controller: "+err.Error()))
}

// connClosed is ConnClosed's message.
type connClosed struct{ conn uint64 }

// scanTick is the lease scan's timer message.
type scanTick struct{}

// applied is the outcome of one raft apply, handed back to the stage; done
// runs there. A panic in done fails the request it answers.
type applied struct {
	req  *request // nil: the controller's own command (announce, elect)
	done func(Result, error)
	res  Result
	err  error
}

// Fail implements stage.Failable.
func (a *applied) Fail(err error) {
	if a.req != nil {
		a.req.Fail(err)
	}
}

// spawn starts the controller's stage in cfg.System (or an actor system of
// its own), under the supervisor's policy: a panic restarts the actor,
// too many stop it for good (the registry's Retire then answers every
// later request SYSTEM_ERROR).
func (c *Controller) spawn() error {
	log := c.cfg.Logger
	if c.system == nil {
		c.system, c.ownSystem = stage.NewSystem(log), true
	}
	reg := c.cfg.Stages
	if reg == nil {
		reg = stage.NewRegistry(nil)
	}
	strategy := supervisor.New(supervisor.Policy{Logger: log, OnRestart: reg.Restarted, Retire: reg.Retire})
	st, err := reg.Spawn(c.system, strategy, StageName, func(self *stage.Stage) actor.Actor {
		c.st.Store(self)
		return &ctlActor{c: c, timer: self.NewTimer()}
	})
	if err != nil {
		if c.ownSystem {
			c.system.Shutdown()
		}
		return fmt.Errorf("controller: %w", err)
	}
	c.st.Store(st)
	return nil
}

// ctlActor is one incarnation of the controller's stage. Its state is the
// Controller's liveness table, which every (re)start rebuilds; the
// replicated state is the raft FSM's.
type ctlActor struct {
	c     *Controller
	timer *stage.Timer
}

// Receive implements actor.Actor.
func (a *ctlActor) Receive(ctx actor.Context) {
	c := a.c
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.resetLiveness()
		a.timer.Arm(c.cfg.ScanInterval, scanTick{})
	case *actor.Stopping, *actor.Restarting:
		a.timer.Stop()
	case *request:
		c.testHook(m)
		c.serve(m)
	case connClosed:
		c.connClosed(m.conn)
	case *applied:
		c.testHook(m)
		m.done(m.res, m.err)
	case scanTick:
		// Armed first: a scan that panics does not end the chain (the
		// restart arms it again anyway).
		a.timer.Arm(c.cfg.ScanInterval, scanTick{})
		if !c.stopping() {
			c.scan()
		}
	}
}

// resetLiveness gives the stage a fresh liveness table: on the first start
// an empty one, after a restart (the old table may be what failed) one in
// which every broker has a fresh lease from now, as a leader change does
// (a master absent from the table is presumed alive until now+lease).
func (c *Controller) resetLiveness() {
	l := newLiveness(c.cfg.Lease)
	if c.IsLeader() {
		l.leader, l.leaderSince = true, c.cfg.Now()
		c.cfg.Logger.Info().Str("id", string(c.node.selfID)).Msg("controller: stage started as leader; every broker has a fresh lease")
	}
	c.live = l
}

// testHook runs the test's panic hook, if any, on m.
func (c *Controller) testHook(m any) {
	if h := c.panicHook.Load(); h != nil {
		(*h)(m)
	}
}
