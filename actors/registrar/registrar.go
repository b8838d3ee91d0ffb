// Package registrar is the stage that registers a broker with its name
// servers: REGISTER_BROKER to every name server every Interval and right
// after a topic change (coalesced), and UNREGISTER_BROKER when it stops. It
// does network I/O, so it runs as its own stage: a slow name server delays
// only registrations, never a send or a pull.
//
// # One name server never delays another
//
// Each name server has its own call: the actor starts a goroutine per
// registration and name server (bounded by Timeout, dial included) and
// goes on; the outcome comes back as a message. A name server keeps at most
// one registration in flight: asking again meanwhile queues one more, made
// with the topic table current when it starts. So a dead or hanging name
// server holds up neither the registrations with the others nor the
// actor's next message. A failed registration is retried after a second,
// with that name server only. The connection to each name server stays
// open between registrations (the name server drops a broker at once when
// it closes, like RocketMQ's BrokerHousekeepingService); when it breaks
// the broker registers again a second later, so a restarted name server
// learns the broker without waiting for the next period.
//
// Every goroutine the stage starts ends when its call ends or when the
// stage stops or restarts (a context cancelled in Stopping/Restarting,
// which then waits for them).
package registrar

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// StageName is the stage's stable name.
const StageName = "registrar"

// DefaultTimeout bounds one REGISTER_BROKER round trip to one name server,
// dial included.
const DefaultTimeout = 3 * time.Second

// retryAfter is how soon a failed registration is tried again: clients
// cannot route to the broker until one gets through.
const retryAfter = time.Second

// Options configures the stage.
type Options struct {
	// NameServers are the addresses registered with.
	NameServers []string
	// Interval is the period of registrations (default 30 s).
	Interval time.Duration
	// Timeout bounds one registration with one name server (default
	// DefaultTimeout).
	Timeout time.Duration
	// Info identifies the broker in the registrations.
	Info namesrv.BrokerInfo
	// Topics is the topic table published with each registration.
	Topics *topics.View
	Logger zerolog.Logger
}

// Register registers now (not coalesced) and calls Done once every name
// server answered or failed a registration that started after it was
// asked; used when a client must not ask for a route before the name
// servers know a topic the broker just made.
type Register struct {
	Done func()
}

// Fail implements stage.Failable: the waiter goes on without registration.
func (r *Register) Fail(error) { r.Done() }

type registerNow struct{}
type registerTick struct{}

// retryFailed registers again with the name servers whose last
// registration failed.
type retryFailed struct{}

// Kicker asks the stage for a registration soon, coalescing requests: many
// topic changes between two registrations cost one.
type Kicker struct {
	stage   atomic.Pointer[stage.Stage]
	pending atomic.Bool
}

// Kick asks for a registration soon; safe from any goroutine, a no-op
// before the stage runs.
func (k *Kicker) Kick() {
	s := k.stage.Load()
	if s != nil && k.pending.CompareAndSwap(false, true) {
		s.Send(registerNow{})
	}
}

// Stage returns the registrar stage once spawned (nil before).
func (k *Kicker) Stage() *stage.Stage { return k.stage.Load() }

// registrar is the actor. Its fields are touched on the actor's goroutine
// only, except nameServer.conn (see there).
type registrar struct {
	opts   Options
	kicker *Kicker
	self   *stage.Stage
	tick   *stage.Timer
	retry  *stage.Timer
	ns     []*nameServer
	// ctx ends the calls and connection watchers under way (cancelled when
	// the actor stops or restarts); wg counts them.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// req is the REGISTER_BROKER request built from the table reqFrom.
	req     *remoting.Command
	reqFrom *topics.Table
}

// Producer returns the actor producer; k is bound to the stage.
func Producer(opts Options, k *Kicker) stage.Producer {
	if opts.Interval <= 0 {
		opts.Interval = 30 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return func(self *stage.Stage) actor.Actor {
		k.stage.Store(self)
		return &registrar{opts: opts, kicker: k, self: self, tick: self.NewTimer(), retry: self.NewTimer()}
	}
}

// Receive implements actor.Actor.
func (r *registrar) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.ctx, r.cancel = context.WithCancel(context.Background())
		r.ns = make([]*nameServer, len(r.opts.NameServers))
		for i, addr := range r.opts.NameServers {
			r.ns[i] = &nameServer{addr: addr}
		}
		r.tick.Arm(r.opts.Interval, registerTick{})
		r.registerAll(nil)
	case registerNow:
		r.kicker.pending.Store(false)
		r.registerAll(nil)
	case *Register:
		r.registerAll(&waiter{done: m.Done})
	case registerTick:
		r.registerAll(nil)
		r.tick.Arm(r.opts.Interval, registerTick{})
	case retryFailed:
		for _, n := range r.ns {
			if n.failed {
				r.register(n, nil)
			}
		}
	case *callDone:
		r.callDone(m)
	case *connLost:
		r.connLost(m)
	case *actor.Stopping:
		r.stop()
		r.unregisterAll()
		r.closeAll()
	case *actor.Restarting:
		r.stop()
		r.closeAll()
	}
}

// registerAll registers with every name server; w (may be nil) is told
// when all of them answered or failed.
func (r *registrar) registerAll(w *waiter) {
	if w != nil {
		w.left = len(r.ns)
		if w.left == 0 {
			w.done()
			return
		}
	}
	for _, n := range r.ns {
		r.register(n, w)
	}
}

// stop ends the calls and watchers under way and waits for them: they end
// at once, their contexts being cancelled.
func (r *registrar) stop() {
	r.tick.Stop()
	r.retry.Stop()
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
	// Waiters of calls that ended without reporting go on.
	for _, n := range r.ns {
		n.busy = false
		for _, w := range append(n.current, n.next...) {
			w.finish()
		}
		n.current, n.next = nil, nil
	}
}

// unregisterAll sends UNREGISTER_BROKER to every name server at once and
// waits for the answers, each within Timeout.
func (r *registrar) unregisterAll() {
	req := namesrv.NewUnregisterRequest(r.opts.Info)
	var wg sync.WaitGroup
	for _, n := range r.ns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
			defer cancel()
			if err := n.invoke(ctx, req, r.opts.Logger); err != nil {
				r.opts.Logger.Debug().Err(err).Str("namesrv", n.addr).Msg("unregister broker failed")
			}
		}()
	}
	wg.Wait()
}

func (r *registrar) closeAll() {
	for _, n := range r.ns {
		if n.conn != nil {
			_ = n.conn.Close()
			n.conn = nil
		}
	}
}
