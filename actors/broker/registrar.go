package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// registrarStage is the stable name of the stage that registers the broker
// with its name servers.
const registrarStage = "registrar"

// registerTimeout bounds one REGISTER_BROKER round trip.
const registerTimeout = 3 * time.Second

type registerNow struct{}
type registerTick struct{}

// registrar registers the broker with every name server every
// RegisterInterval and right after a topic change, and unregisters it when
// it stops. It does network I/O, so it runs as its own stage: a slow name
// server delays only registrations.
type registrar struct {
	b       *Broker
	pending *atomic.Bool // a registerNow is queued
	conns   map[string]*remoting.Client
	timer   *time.Timer
	log     zerolog.Logger
}

func (b *Broker) spawnRegistrar() error {
	if len(b.cfg.NameServers) == 0 {
		return nil
	}
	pending := &b.regPending
	log := b.cfg.Logger.With().Str("stage", registrarStage).Logger()
	if _, err := b.spawnStage(registrarStage, func() actor.Actor {
		return &registrar{b: b, pending: pending, log: log}
	}); err != nil {
		return err
	}
	b.topicsChanged()
	return nil
}

// topicsChanged asks for a registration soon (coalesced).
func (b *Broker) topicsChanged() {
	s := b.stage(registrarStage)
	if s == nil {
		return
	}
	if b.regPending.CompareAndSwap(false, true) {
		s.Send(registerNow{})
	}
}

// Receive implements actor.Actor.
func (r *registrar) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		r.conns = map[string]*remoting.Client{}
		r.arm()
	case registerNow:
		r.pending.Store(false)
		r.registerAll()
	case registerTick:
		r.registerAll()
		r.arm()
	case *actor.Stopping:
		if r.timer != nil {
			r.timer.Stop()
		}
		r.unregisterAll()
		r.closeAll()
	case *actor.Restarting:
		if r.timer != nil {
			r.timer.Stop()
		}
		r.closeAll()
	}
}

func (r *registrar) arm() {
	// Replace, never add: a tick left in the mailbox by the instance before
	// a restart must not start a second timer.
	if r.timer != nil {
		r.timer.Stop()
	}
	b := r.b
	r.timer = time.AfterFunc(b.cfg.RegisterInterval, func() {
		if s := b.stage(registrarStage); s != nil {
			s.Send(registerTick{})
		}
	})
}

func (r *registrar) info() namesrv.BrokerInfo {
	b := r.b
	return namesrv.BrokerInfo{
		Cluster: b.cfg.Cluster, BrokerName: b.cfg.BrokerName, BrokerAddr: b.advertise.String(),
		HAServerAddr: b.advertise.String(), BrokerID: 0, HeartbeatTimeout: 120 * time.Second,
	}
}

func (r *registrar) registerAll() {
	t := r.b.topicView.Load()
	req, err := namesrv.NewRegisterRequest(r.info(), t.Topics, namesrv.DataVersion{
		Timestamp: t.Version.Timestamp, Counter: t.Version.Counter,
	})
	if err != nil {
		r.log.Error().Err(err).Msg("build register request failed")
		return
	}
	for _, addr := range r.b.cfg.NameServers {
		if err := r.invoke(addr, req); err != nil {
			r.log.Warn().Err(err).Str("namesrv", addr).Msg("register broker failed; retrying in 1 s")
			// Do not wait for the next 30 s round: clients cannot route to
			// this broker until a registration gets through.
			time.AfterFunc(time.Second, r.b.topicsChanged)
			continue
		}
		r.log.Debug().Str("namesrv", addr).Int("topics", len(t.Topics)).Msg("broker registered")
	}
}

func (r *registrar) unregisterAll() {
	req := namesrv.NewUnregisterRequest(r.info())
	for _, addr := range r.b.cfg.NameServers {
		if err := r.invoke(addr, req); err != nil {
			r.log.Debug().Err(err).Str("namesrv", addr).Msg("unregister broker failed")
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
		if c, err = remoting.Dial(ctx, addr, remoting.ClientOptions{Logger: r.log}); err != nil {
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
