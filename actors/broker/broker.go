// Package broker assembles a wheelmq broker: it opens the store, spawns the
// supervised stages (commitlog writer, dispatch, pull, offsets, clients,
// topics, registrar), serves the remoting port through netloop and routes
// each request family to its stage.
//
// One file per request family: send.go (SEND_MESSAGE, V2, batch),
// pull.go (PULL_MESSAGE and offset queries), clientreq.go (heartbeat,
// unregister, consumer list), admin.go (topics). router.go dispatches codes.
// Handlers run on a netloop event loop: they parse and validate, then hand
// the work to a stage and return; stages answer through Conn.Send.
package broker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// Broker is a running broker.
type Broker struct {
	cfg       Config
	store     *storage.Store
	system    *actor.ActorSystem
	metrics   *stage.Metrics
	server    *netloop.Server
	advertise netip.AddrPort
	uniq      *message.UniqKeyGenerator

	topicView  topics.View
	subView    clients.View
	kicker     dispatch.Kicker
	writerSt   *stage.Stage
	dispatchSt *stage.Stage
	pullSt     *stage.Stage
	offsetsSt  *stage.Stage
	clientsSt  *stage.Stage
	topicsSt   *stage.Stage
	wheel      *timerwheel.Store
	timers     atomic.Pointer[timer.Service]
	stageMu    sync.RWMutex
	stages     map[string]*stage.Stage // guarded by stageMu

	strat      *supervisor.Strategy
	regPending atomic.Bool // a registerNow is queued

	ready   atomic.Bool  // advertise and uniq are set: requests are served
	backlog atomic.Int64 // appends sent to the writer and not answered
	stopped atomic.Bool
}

// Start opens the store, spawns the stages and starts serving.
func Start(cfg Config) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("broker config: %w", err)
	}
	log := cfg.Logger
	st, err := storage.Open(cfg.DataDir, storage.Options{SegmentSize: cfg.SegmentSize, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("broker start: %w", err)
	}
	b := &Broker{cfg: cfg, store: st, stages: map[string]*stage.Stage{}}
	wheel, err := timerwheel.Open(timerwheel.Options{
		Dir: st.TimerDir(), MaxDelay: cfg.MaxTimerDelay, Logger: log.With().Str("component", "timerwheel").Logger(),
	}, time.Now().UnixMilli())
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("broker start: open timer store: %w", err)
	}
	b.wheel = wheel
	b.system = stage.NewSystem(log)
	b.metrics = stage.NewMetrics(cfg.Registerer)
	if cfg.Registerer != nil {
		registerStoreMetrics(cfg.Registerer, b)
		timer.RegisterWheelGauges(cfg.Registerer, wheel)
	}
	if err := b.spawn(); err != nil {
		b.shutdownStages()
		_ = wheel.Close()
		_ = st.Close()
		return nil, err
	}
	b.server = netloop.NewServer(netloop.Config{
		Name: "broker", Addr: cfg.Listen, MaxFrame: cfg.MaxFrame, Logger: log,
	}, &router{b: b})
	if err := b.server.Start(); err != nil {
		b.shutdownStages()
		_ = wheel.Close()
		_ = st.Close()
		return nil, fmt.Errorf("broker listen %s: %w", cfg.Listen, err)
	}
	adv, err := advertiseFor(cfg.Advertise, b.server.Addr())
	if err != nil {
		_ = b.Stop(context.Background())
		return nil, err
	}
	b.advertise = adv
	b.uniq = message.NewUniqKeyGenerator(adv.Addr(), os.Getpid(), int32(time.Now().UnixNano()))
	b.ready.Store(true)
	if err := b.spawnRegistrar(); err != nil {
		_ = b.Stop(context.Background())
		return nil, err
	}
	log.Info().Str("listen", b.server.Addr()).Str("advertise", adv.String()).Str("broker", cfg.BrokerName).
		Str("cluster", cfg.Cluster).Str("flush", cfg.Flush.String()).Strs("namesrv", cfg.NameServers).
		Msg("broker started")
	return b, nil
}

func (b *Broker) spawn() error {
	cfg, log := b.cfg, b.cfg.Logger
	strategy := b.strategy()
	spawn := b.spawnStage
	self := func(name string) func() *stage.Stage { return func() *stage.Stage { return b.stage(name) } }
	b.store.Dispatched.Store(dispatch.StartOffset(b.store, log))
	var err error
	defaults := meta.DefaultTopics(cfg.BrokerName, cfg.Cluster, cfg.AutoCreateTopic)
	if tbw, ok := defaults["TBW102"]; ok {
		tbw.ReadQueueNums, tbw.WriteQueueNums = cfg.DefaultQueueNums, cfg.DefaultQueueNums
		defaults["TBW102"] = tbw
	}
	table, ver, err := topics.Load(b.store.TopicsPath(), defaults)
	if err != nil {
		return fmt.Errorf("broker start: %w", err)
	}
	b.topicView.Init(table, ver)
	if b.topicsSt, err = spawn(topics.StageName, topics.Producer(topics.Options{
		Path: b.store.TopicsPath(), Defaults: defaults, View: &b.topicView,
		Changed: b.topicsChanged, Logger: log.With().Str("stage", topics.StageName).Logger(),
	})); err != nil {
		return err
	}
	if b.offsetsSt, err = spawn(offsets.StageName, offsets.Producer(offsets.Options{
		Path: b.store.OffsetsPath(), Self: self(offsets.StageName),
		Logger: log.With().Str("stage", offsets.StageName).Logger(),
	})); err != nil {
		return err
	}
	if b.pullSt, err = spawn(pull.StageName, pull.Producer(pull.Options{
		Store: b.store, Self: self(pull.StageName), Logger: log.With().Str("stage", pull.StageName).Logger(),
	})); err != nil {
		return err
	}
	if b.dispatchSt, err = spawn(dispatch.StageName, dispatch.Producer(dispatch.Options{
		Store: b.store, Notify: b.arrived, Logger: log.With().Str("stage", dispatch.StageName).Logger(),
	}, &b.kicker)); err != nil {
		return err
	}
	b.kicker.Bind(b.dispatchSt)
	b.kicker.Kick()
	if b.writerSt, err = spawn(writer.StageName, writer.Producer(writer.Options{
		Store: b.store, Mode: cfg.Flush, Appended: b.kicker.Kick, Fault: writerFault(cfg.TimerFaults),
		Logger: log.With().Str("stage", writer.StageName).Logger(),
	}, self(writer.StageName))); err != nil {
		return err
	}
	if b.clientsSt, err = spawn(clients.StageName, clients.Producer(clients.Options{
		View: &b.subView, EnsureRetryTopic: b.ensureRetryTopic, Self: self(clients.StageName),
		Logger: log.With().Str("stage", clients.StageName).Logger(),
	})); err != nil {
		return err
	}
	ts, err := timer.Start(b.system, b.metrics, strategy, timer.Options{
		Store: b.store, Wheel: b.wheel, Faults: cfg.TimerFaults, PutTimeout: cfg.TimerPutTimeout,
		Append:  func(a *writer.Append) { b.writerSt.Send(a) },
		Metrics: timer.NewMetrics(cfg.Registerer),
		Logger:  log.With().Str("component", "timer").Logger(),
	})
	if err != nil {
		return err
	}
	b.timers.Store(ts)
	ts.KickEnqueue()
	return nil
}

// arrived forwards dispatcher news to the pull stage.
func (b *Broker) arrived(a []dispatch.Arrival) {
	for _, q := range a {
		if ts := b.timers.Load(); q.Topic == timer.Topic && ts != nil {
			ts.KickEnqueue()
		}
	}
	b.pullSt.Send(&pull.Arrived{Queues: a})
}

// Addr is the bound remoting address.
func (b *Broker) Addr() string { return b.server.Addr() }

// Advertise is the address published in routes.
func (b *Broker) Advertise() string { return b.advertise.String() }

// Store exposes the open store (for tools and tests).
func (b *Broker) Store() *storage.Store { return b.store }

// Stop stops accepting, answers what is pending, flushes and closes.
func (b *Broker) Stop(ctx context.Context) error {
	if !b.stopped.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	if b.server != nil {
		if err := b.server.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop server: %w", err))
		}
	}
	b.shutdownStages()
	if err := b.wheel.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close timer store: %w", err))
	}
	if err := b.store.Close(); err != nil {
		errs = append(errs, err)
	}
	b.system.Shutdown()
	b.cfg.Logger.Info().Msg("broker stopped")
	return errors.Join(errs...)
}

// shutdownStages stops the stages in dependency order; each one persists its
// state in its Stopping handler.
func (b *Broker) shutdownStages() {
	if ts := b.timers.Load(); ts != nil {
		ts.Stop()
	}
	for _, name := range []string{registrarStage, clients.StageName, pull.StageName, writer.StageName,
		dispatch.StageName, offsets.StageName, topics.StageName} {
		if s := b.stage(name); s != nil {
			s.Stop()
		}
	}
}

// spawnStage spawns a supervised stage and records it by name.
func (b *Broker) spawnStage(name string, p actor.Producer) (*stage.Stage, error) {
	s, err := b.metrics.Spawn(b.system, b.strategy(), name, p)
	if err != nil {
		return nil, err
	}
	b.stageMu.Lock()
	b.stages[name] = s
	b.stageMu.Unlock()
	return s, nil
}

// stage returns a spawned stage by name (nil before it is spawned).
func (b *Broker) stage(name string) *stage.Stage {
	b.stageMu.RLock()
	defer b.stageMu.RUnlock()
	return b.stages[name]
}

// strategy is the supervision strategy shared by every stage.
func (b *Broker) strategy() *supervisor.Strategy {
	if b.strat == nil {
		b.strat = supervisor.New(supervisor.Policy{
			Logger:    b.cfg.Logger,
			Fatal:     []error{commitlog.ErrCorrupt, meta.ErrCorrupt},
			OnRestart: b.metrics.Restarted,
		})
	}
	return b.strat
}

// writerFault returns the writer's fault hook (nil without faults).
func writerFault(f *timer.Faults) func() {
	if f == nil {
		return nil
	}
	return func() { f.Hit(writer.StageName) }
}
