// Package pipeline is a broker's composition root on the actor side: it
// opens the store and the timer store, spawns every supervised stage
// (commitlog writer, dispatch, the index, pull, offsets, clients, topics,
// groups, acl (the ACL 2.0 users and policies), stats, transaction, the
// five timer stages, retention and, once the broker's address is known,
// the registrar) under one supervision
// strategy, and stops them in dependency order (stop.go: Drain, then
// Shutdown), closing a store only once every stage using it has stopped.
//
// The pull side is several stages (actors/pull: the pull stage and its
// pull_read_<i> readers, Config.PullWorkers), started and stopped as one.
//
// It lists what CommitLog retention must keep (retentionPins, one named
// provider per stage position that still needs records) and holds the
// sampled disk use the request router checks before a send (Disk).
//
// It also owns the broker's health: a stage that its supervisor stops for
// good (a fatal error, or more restarts than the policy allows) is retired
// by the stage layer (its queued and later requests are answered with an
// error) and listed by Down; the broker's /healthz, its
// wheelmq_broker_healthy gauge and the request router read it from here.
//
// The request handlers that feed the stages run on the network event
// loops, in netloop/router.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/actors/metalog"
	"github.com/wheelmq/wheelmq/storage/metarec"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/acl"
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/index"
	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/registrar"
	"github.com/wheelmq/wheelmq/actors/retention"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/actors/txcheck"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// Pipeline is a broker's running stages and the stores they own.
type Pipeline struct {
	cfg    Config
	store  *storage.Store
	wheel  *timerwheel.Store
	system *actor.ActorSystem
	stages *stage.Registry
	strat  *supervisor.Strategy

	topicView topics.View
	groupView groups.View
	subView   clients.View
	resetView offsets.ResetView
	statsView stats.View
	// advertised is the broker's address once it listens (SetAdvertised).
	advertised atomic.Pointer[string]
	aclView    acl.View
	counters   stats.Counters
	booted     time.Time
	kicker     dispatch.Kicker
	indexKick  index.Kicker
	regKicker  registrar.Kicker
	timers     atomic.Pointer[timer.Service]
	pulls      atomic.Pointer[pull.Service]
	// parkRefused counts long polls answered at once because their
	// connection had its bound of parked pulls.
	parkRefused prometheus.Counter
	txKicker    txcheck.Kicker
	txLow       *txcheck.Watermark
	disk        retention.Disk
	appends     *writer.Inbox
	parked      atomic.Int64 // parked pulls (pull.Options.Parked)
	popParked   atomic.Int64 // parked pops (pop.Options.Parked)
	popEngine   atomic.Pointer[pop.Engine]
	popLate     prometheus.Histogram // wheelmq_pop_redelivery_late_seconds
	settings    settingsState

	// Replication (replication.go; nil/zero with ReplicationNone).
	role    *role.Holder
	confirm *confirmerSlot
	durable *durableSlot
	repl    *Replication
	// promotedEpoch is epoch+1 of the last promotion done (role.go; 0:
	// none): kept across restarts of the role stage.
	promotedEpoch atomic.Int64
	// The metrics of stages a role change may spawn again, registered once.
	metricsOnce sync.Once
	txMetrics   *txcheck.Metrics
	retMetrics  *retention.Metrics

	mu     sync.RWMutex
	byName map[string]*stage.Stage // guarded by mu

	closed atomic.Bool
	stuck  stuckStages // stages that did not stop in time (stop.go)
}

// Open validates cfg, opens the stores and spawns the stages (all but the
// registrar: see StartRegistrar).
func Open(cfg Config) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("broker config: %w", err)
	}
	log := cfg.Logger
	damage := corruption.NewMetrics(cfg.Registerer)
	st, err := storage.Open(cfg.DataDir, storage.Options{SegmentSize: cfg.SegmentSize, Logger: log, FS: cfg.StoreFS,
		OnCorruption: cfg.OnCorruption, Corruption: damage})
	if err != nil {
		return nil, fmt.Errorf("broker start: %w", err)
	}
	p := &Pipeline{cfg: cfg, store: st, byName: map[string]*stage.Stage{}, txLow: txcheck.NewWatermark(),
		booted: time.Now(), appends: writer.NewInbox(), popLate: newPopLate(), parkRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wheelmq_pull_park_refused_total",
			Help: "Long polls answered at once (PULL_NOT_FOUND) because their connection had its bound of parked pulls.",
		})}
	if err := p.initSettings(p.booted); err != nil {
		_ = st.Close()
		return nil, err
	}
	wopts := timerwheel.Options{
		Dir: st.TimerDir(), FS: st.FS, MaxDelay: cfg.MaxTimerDelay, Logger: log.With().Str("component", "timerwheel").Logger(),
		OnCorruption: cfg.OnCorruption, Corruption: damage,
	}
	if g := cfg.TimerGeometry; g != nil {
		wopts.SlotMs, wopts.NearSlots, wopts.FarSlotMs, wopts.CancelWindow = g.SlotMs, g.NearSlots, g.FarSlotMs, g.CancelWindow
	}
	wheel, err := timerwheel.Open(wopts, timer.InitialDequeueMs(st, time.Now().UnixMilli()))
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("broker start: open timer store: %w", err)
	}
	p.wheel = wheel
	p.system = stage.NewSystem(log)
	p.stages = cfg.Stages
	if p.stages == nil {
		p.stages = stage.NewRegistry(cfg.Registerer)
	}
	p.strat = supervisor.New(supervisor.Policy{
		Logger:    log,
		Fatal:     []error{commitlog.ErrCorrupt, meta.ErrCorrupt, corruption.ErrStop},
		OnRestart: p.stages.Restarted,
		Retire:    p.retire,
	})
	if cfg.Registerer != nil {
		registerMetrics(cfg.Registerer, p)
		registerPopMetrics(cfg.Registerer, p)
		registerTrafficMetrics(cfg.Registerer, p)
		registerRocketMQMetrics(cfg.Registerer, p)
		timer.RegisterWheelGauges(cfg.Registerer, wheel)
	}
	if err := p.spawn(); err != nil {
		_ = p.Shutdown(context.Background()) // what was spawned, then the stores
		return nil, err
	}
	return p, nil
}

func (p *Pipeline) spawn() error {
	cfg, log := p.cfg, p.cfg.Logger
	logFor := func(name string) zerolog.Logger { return log.With().Str("stage", name).Logger() }
	if err := p.reconcileCheckpoints(); err != nil {
		return fmt.Errorf("broker start: %w", err)
	}
	p.store.Dispatched.Store(dispatch.StartOffset(p.store, log))
	if err := p.reconcile(); err != nil {
		return fmt.Errorf("broker start: %w", err)
	}
	p.initReplication()
	defaults := meta.DefaultTopics(cfg.BrokerName, cfg.Cluster, cfg.AutoCreateTopic)
	if tbw, ok := defaults["TBW102"]; ok {
		tbw.ReadQueueNums, tbw.WriteQueueNums = cfg.DefaultQueueNums, cfg.DefaultQueueNums
		defaults["TBW102"] = tbw
	}
	table, ver, err := topics.Load(p.store.FS, p.store.TopicsPath(), defaults, log)
	if err != nil {
		return fmt.Errorf("broker start: %w", err)
	}
	p.topicView.Init(table, ver)
	groupDefaults := meta.DefaultSubscriptionGroups()
	groupTable, groupVer, err := groups.Load(p.store.FS, p.store.SubscriptionGroupsPath(), groupDefaults, log)
	if err != nil {
		return fmt.Errorf("broker start: %w", err)
	}
	p.groupView.Init(groupTable, groupVer)
	aclSnap, err := acl.Load(p.store.FS, p.store.ACLDir(), log)
	if err != nil {
		return fmt.Errorf("broker start: %w", err)
	}
	p.aclView.Init(aclSnap)
	spawns := []struct {
		name     string
		producer stage.Producer
	}{
		{topics.StageName, topics.Producer(topics.Options{
			FS: p.store.FS, Path: p.store.TopicsPath(), Defaults: defaults, View: &p.topicView,
			Changed: func() { p.regKicker.Kick(); p.toMetaLog(metalog.TopicsChanged{}) }, Logger: logFor(topics.StageName),
		})},
		{groups.StageName, groups.Producer(groups.Options{
			FS: p.store.FS, Path: p.store.SubscriptionGroupsPath(), Defaults: groupDefaults, View: &p.groupView,
			Changed: func() { p.toMetaLog(metalog.GroupsChanged{}) }, Logger: logFor(groups.StageName),
		})},
		{offsets.StageName, offsets.Producer(offsets.Options{
			FS: p.store.FS, Path: p.store.OffsetsPath(), FlushInterval: cfg.OffsetFlushInterval, Resets: &p.resetView,
			Journal: p.offsetJournal(), Dropped: p.offsetsDropped(), Logger: logFor(offsets.StageName),
		})},
		{dispatch.StageName, dispatch.Producer(dispatch.Options{
			Store: p.store, Notify: p.arrived, UpToDurableEnd: p.replicated(), Logger: logFor(dispatch.StageName),
		}, &p.kicker)},
		{writer.StageName, writer.Producer(p.writerOptions(logFor(writer.StageName)))},
		{clients.StageName, clients.Producer(clients.Options{
			View: &p.subView, EnsureRetryTopic: func(group string) { p.EnsureGroupTopic(meta.RetryTopic(group), nil) },
			LockExpiry: cfg.OrderlyLockExpiry,
			NotifyEnabled: func(group string) bool {
				g, ok := p.groupView.Get(group)
				return !ok || g.NotifyConsumerIDsChangedEnable
			},
			Logger: logFor(clients.StageName),
		})},
		{acl.StageName, acl.Producer(acl.Options{
			FS: p.store.FS, Dir: p.store.ACLDir(), View: &p.aclView, Logger: logFor(acl.StageName),
		})},
		{stats.StageName, stats.Producer(stats.Options{Counters: &p.counters, View: &p.statsView,
			Timer: func() (uint64, uint64) { s := p.wheel.Stats(); return s.Added, s.Issued }})},
	}
	if cfg.Index {
		spawns = append(spawns, struct {
			name     string
			producer stage.Producer
		}{index.StageName, index.Producer(index.Options{Store: p.store, Logger: logFor(index.StageName)}, &p.indexKick)})
	}
	if !p.replicated() { // else the role stage starts it on a master
		spawns = append(spawns, struct {
			name     string
			producer stage.Producer
		}{txcheck.StageName, p.txcheckProducer()})
	}
	// The pull stages first: dispatch wakes them (Arrived).
	pulls, err := pull.Start(p.system, p.stages, p.strat, pull.Options{
		Store: p.store, Readers: cfg.PullWorkers, MaxParkedPerConn: cfg.MaxParkedPullsPerConn,
		MaxParkedLive: func() int { return p.Settings().MaxParkedPullsPerConn },
		Served:        p.counters.Served, Parked: &p.parked, ParkRefused: p.parkRefused.Inc,
		Logger: logFor(pull.StageName),
	})
	if err != nil {
		return err
	}
	p.pulls.Store(pulls)
	var progress *metalog.Progress
	if cfg.MetadataLog {
		progress = metalog.NewProgress(p.store)
	}
	eng := p.newPopEngine(logFor(pop.StageName), progress)
	spawns = append(spawns, struct {
		name     string
		producer stage.Producer
	}{pop.StageName, eng.Producer()})
	if cfg.MetadataLog { // after the POP stage: it applies request modes
		spawns = append(spawns, struct {
			name     string
			producer stage.Producer
		}{metalog.StageName, metalog.Producer(metalog.Options{
			Store: p.store, Append: p.appends.Push, Role: cfg.Role, Topics: &p.topicView, Groups: &p.groupView,
			Modes: eng.Modes(), Progress: progress,
			SendTopics:  func(m any) { p.Stage(topics.StageName).Send(m) },
			SendGroups:  func(m any) { p.Stage(groups.StageName).Send(m) },
			SendOffsets: func(m any) { p.Stage(offsets.StageName).Send(m) },
			SendPop:     func(m any) { p.Stage(pop.StageName).Send(m) },
			Logger:      logFor(metalog.StageName),
		})})
	}
	for _, s := range spawns {
		if _, err := p.spawnStage(s.name, s.producer); err != nil {
			return err
		}
	}
	p.kicker.Kick()
	ts, err := timer.Start(p.system, p.stages, p.strat, timer.Options{
		Store: p.store, Wheel: p.wheel, Faults: cfg.TimerFaults, PutTimeout: cfg.TimerPutTimeout,
		DequeueWorkers: cfg.TimerDequeueWorkers, Role: cfg.Role,
		Append:  p.appends.Push,
		Metrics: timer.NewMetrics(cfg.Registerer),
		Logger:  log.With().Str("component", "timer").Logger(),
	})
	if err != nil {
		return err
	}
	p.timers.Store(ts)
	ts.KickEnqueue()
	if err := p.startRetention(); err != nil {
		return err
	}
	if !p.replicated() {
		return nil
	}
	if err := p.startReplication(); err != nil {
		return err
	}
	rs, err := p.spawnStage(RoleStageName, p.roleProducer())
	if err != nil {
		return err
	}
	p.role.Subscribe(func(_, _ role.State) { rs.Send(roleChanged{}) })
	return nil
}

// StartRegistrar starts registering the broker, described by info, with
// the configured name servers (nothing when there are none). Call it once
// the broker's advertised address is known.
func (p *Pipeline) StartRegistrar(info namesrv.BrokerInfo) error {
	if len(p.cfg.NameServers) == 0 {
		return nil
	}
	if p.cfg.NameServerCalls == nil {
		return errors.New("start registrar: no name-server calls configured (Config.NameServerCalls)")
	}
	_, err := p.spawnStage(registrar.StageName, registrar.Producer(registrar.Options{
		NameServers: p.cfg.NameServers, Calls: p.cfg.NameServerCalls, Interval: p.cfg.RegisterInterval, RouteWait: p.cfg.RouteWait,
		Info: info, Role: p.role,
		Topics: &p.topicView, Metrics: registrar.NewMetrics(p.cfg.Registerer),
		Logger: p.cfg.Logger.With().Str("stage", registrar.StageName).Logger(),
	}, &p.regKicker))
	return err
}

// AwaitRoutes calls done once the name servers serve the topic table now
// published, so that the routes of the topics just made are there: once
// every name server acknowledged a registration of this table or a later
// one, or its registration failed, or Config.RouteWait passed (see
// actors/registrar, "Waiting for a route"); at once without a registrar
// (none configured, not started yet, or stopped).
// Call it after the topic change was published (in the Done of
// topics.Ensure or topics.Put); topics name them in the log line of a
// wait that ends without every acknowledgement. done may run on the
// registrar's goroutine: it must not block.
func (p *Pipeline) AwaitRoutes(topics []string, done func()) {
	p.regKicker.Await(p.topicView.Load().Version.Counter, topics, done)
}

// EnsureGroupTopic creates a group's %RETRY% or %DLQ% topic (1 queue,
// read-write) if missing and calls done (when not nil) with the outcome;
// the topics stage has the registrar publish the new route.
func (p *Pipeline) EnsureGroupTopic(name string, done func(error)) {
	p.EnsureGroupTopicQueues(name, 1, done)
}

// EnsureGroupTopicQueues is EnsureGroupTopic with a queue count (a
// group's retryQueueNums for its %RETRY% topic; at least 1).
func (p *Pipeline) EnsureGroupTopicQueues(name string, queues int32, done func(error)) {
	if _, ok := p.topicView.Get(name); ok {
		if done != nil {
			done(nil)
		}
		return
	}
	queues = min(max(queues, 1), 1024)
	p.Stage(topics.StageName).Send(&topics.Ensure{Config: meta.TopicConfig{
		TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: meta.PermRead | meta.PermWrite,
		TopicFilterType: "SINGLE_TAG",
	}, Done: func(_ meta.TopicConfig, err error) {
		if done != nil {
			done(err)
		}
	}})
}

// arrived forwards dispatcher news to the pull stage and the timer side.
func (p *Pipeline) arrived(a []dispatch.Arrival) {
	for _, q := range a {
		if ts := p.timers.Load(); q.Topic == timer.Topic && ts != nil {
			ts.KickEnqueue()
		}
		if q.Topic == meta.TopicTransHalf {
			p.txKicker.Kick()
		}
		if q.Topic == metarec.Topic {
			p.toMetaLog(metalog.Kick{})
		}
		if q.Topic == pop.ReviveTopic {
			if st := p.Stage(pop.StageName); st != nil {
				st.Send(&pop.Revived{})
			}
		}
	}
	if p.parked.Load() > 0 {
		p.Stage(pull.StageName).Send(&pull.Arrived{Queues: slices.Clone(a)})
	}
	if p.popParked.Load() > 0 {
		if st := p.Stage(pop.StageName); st != nil {
			st.Send(&pop.Arrived{Queues: slices.Clone(a)})
		}
	}
	p.indexKick.Kick()
}

// toMetaLog sends m to the metadata log stage (dropped when it is off or
// not spawned yet: it reads the tables when it starts).
func (p *Pipeline) toMetaLog(m any) {
	if !p.cfg.MetadataLog {
		return
	}
	if s := p.Stage(metalog.StageName); s != nil {
		s.Send(m)
	}
}

// offsetJournal is the offsets stage's Journal: nil without the metadata
// log.
func (p *Pipeline) offsetJournal() func([]metarec.Offset) {
	if !p.cfg.MetadataLog {
		return nil
	}
	return func(o []metarec.Offset) { p.toMetaLog(&metalog.OffsetsChanged{Offsets: o}) }
}

// offsetsDropped is the offsets stage's Dropped: nil without the
// metadata log.
func (p *Pipeline) offsetsDropped() func(string) {
	if !p.cfg.MetadataLog {
		return nil
	}
	return func(g string) { p.toMetaLog(&metalog.OffsetsDropped{Group: g}) }
}

// retire is the supervisor's Retire hook: the stage layer takes the stage
// over and the broker turns unhealthy.
func (p *Pipeline) retire(id string, reason any) bool {
	ok := p.stages.Retire(id, reason)
	p.cfg.Logger.Error().Str("stage", id).Str("cause", fmt.Sprint(reason)).
		Msg("stage stopped for good: the broker is unhealthy and refuses the requests that need it")
	return ok
}

// spawnStage spawns a supervised stage and records it by name.
func (p *Pipeline) spawnStage(name string, producer stage.Producer) (*stage.Stage, error) {
	s, err := p.stages.Spawn(p.system, p.strat, name, producer)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.byName[name] = s
	p.mu.Unlock()
	return s, nil
}

// writerFault returns the writer's fault hook (nil without faults or
// stall hook).
func writerFault(cfg Config) func() {
	f, stall := cfg.TimerFaults, cfg.WriterStall
	if f == nil && stall == nil {
		return nil
	}
	return func() {
		f.Hit(writer.StageName)
		if stall != nil {
			stall()
		}
	}
}
