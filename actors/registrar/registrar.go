// Package registrar is the stage that registers a broker with its name
// servers: REGISTER_BROKER to every name server every Interval and right
// after a topic change (coalesced), and UNREGISTER_BROKER when it stops. It
// does network I/O, so it runs as its own stage: a slow name server delays
// only registrations, never a send or a pull.
package registrar

import (
	"context"
	"fmt"
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

// registerTimeout bounds one REGISTER_BROKER round trip.
const registerTimeout = 3 * time.Second

// retryAfter is how soon a failed registration is tried again: clients
// cannot route to the broker until one gets through.
const retryAfter = time.Second

// Options configures the stage.
type Options struct {
	// NameServers are the addresses registered with.
	NameServers []string
	// Interval is the period of registrations (default 30 s).
	Interval time.Duration
	// Info identifies the broker in the registrations.
	Info namesrv.BrokerInfo
	// Topics is the topic table published with each registration.
	Topics *topics.View
	Logger zerolog.Logger
}

// Register registers now (not coalesced) and calls Done once every name
// server answered or failed; used when a client must not ask for a route
// before the name servers know a topic the broker just made.
type Register struct {
	Done func()
}

// Fail implements stage.Failable: the waiter goes on without registration.
func (r *Register) Fail(error) { r.Done() }

type registerNow struct{}
type registerTick struct{}

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

// registrar is the actor.
type registrar struct {
	opts   Options
	kicker *Kicker
	conns  map[string]*remoting.Client
	tick   *stage.Timer
	retry  *stage.Timer
}

// Producer returns the actor producer; k is bound to the stage.
func Producer(opts Options, k *Kicker) stage.Producer {
	if opts.Interval <= 0 {
		opts.Interval = 30 * time.Second
	}
	return func(self *stage.Stage) actor.Actor {
		k.stage.Store(self)
		return &registrar{opts: opts, kicker: k, tick: self.NewTimer(), retry: self.NewTimer()}
	}
}

// Receive implements actor.Actor.
func (r *registrar) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.conns = map[string]*remoting.Client{}
		r.tick.Arm(r.opts.Interval, registerTick{})
		r.registerAll()
	case registerNow:
		r.kicker.pending.Store(false)
		r.registerAll()
	case *Register:
		r.registerAll()
		m.Done()
	case registerTick:
		r.registerAll()
		r.tick.Arm(r.opts.Interval, registerTick{})
	case *actor.Stopping:
		r.tick.Stop()
		r.retry.Stop()
		r.unregisterAll()
		r.closeAll()
	case *actor.Restarting:
		r.tick.Stop()
		r.retry.Stop()
		r.closeAll()
	}
}

func (r *registrar) registerAll() {
	t := r.opts.Topics.Load()
	req, err := namesrv.NewRegisterRequest(r.opts.Info, t.Topics, namesrv.DataVersion{
		Timestamp: t.Version.Timestamp, Counter: t.Version.Counter,
	})
	if err != nil {
		r.opts.Logger.Error().Err(err).Msg("build register request failed")
		return
	}
	for _, addr := range r.opts.NameServers {
		if err := r.invoke(addr, req); err != nil {
			r.opts.Logger.Warn().Err(err).Str("namesrv", addr).Dur("retry_in", retryAfter).Msg("register broker failed")
			r.retry.Arm(retryAfter, registerNow{})
			continue
		}
		r.opts.Logger.Debug().Str("namesrv", addr).Int("topics", len(t.Topics)).Msg("broker registered")
	}
}

func (r *registrar) unregisterAll() {
	req := namesrv.NewUnregisterRequest(r.opts.Info)
	for _, addr := range r.opts.NameServers {
		if err := r.invoke(addr, req); err != nil {
			r.opts.Logger.Debug().Err(err).Str("namesrv", addr).Msg("unregister broker failed")
		}
	}
}

// invoke sends req to addr over a cached connection, redialling once.
func (r *registrar) invoke(addr string, req *remoting.Command) error {
	ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
	defer cancel()
	c := r.conns[addr]
	if c == nil {
		var err error
		if c, err = remoting.Dial(ctx, addr, remoting.ClientOptions{Logger: r.opts.Logger}); err != nil {
			return fmt.Errorf("dial name server %s: %w", addr, err)
		}
		r.conns[addr] = c
	}
	cp := *req
	resp, err := c.Invoke(ctx, &cp)
	if err != nil {
		_ = c.Close()
		delete(r.conns, addr)
		return fmt.Errorf("invoke name server %s: %w", addr, err)
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("name server %s answered code %d: %s", addr, resp.Code, resp.Remark)
	}
	return nil
}

func (r *registrar) closeAll() {
	for addr, c := range r.conns {
		_ = c.Close()
		delete(r.conns, addr)
	}
}
