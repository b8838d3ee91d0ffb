// Package stage gives every wheelmq actor a name, a supervisor and metrics.
//
// A Stage is a spawned protoactor-go actor plus its instruments:
//
//	wheelmq_actor_mailbox_depth{stage}     messages sent but not yet taken
//	wheelmq_actor_messages_total{stage}    messages processed
//	wheelmq_actor_process_seconds{stage}   time spent per message (histogram)
//	wheelmq_actor_restarts_total{stage}    restarts ordered by the supervisor
//
// Labels are the stable stage names only (commitlog, dispatch, pull, ...),
// never connection or queue ids. Counting costs two atomics and one
// histogram observation per message, with no allocation: the label-bound
// instruments are resolved once at spawn.
//
// Every message to a stage must go through Stage.Send (also a stage's
// self-ticks), so that the depth gauge stays exact.
package stage

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Metrics holds the per-stage instrument families.
type Metrics struct {
	depth    *prometheus.GaugeVec
	messages *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
	restarts *prometheus.CounterVec

	mu     sync.Mutex
	stages map[string]*Stage // guarded by mu
}

// NewMetrics creates the instrument families and registers them with reg
// (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "wheelmq_actor_mailbox_depth", Help: "Messages sent to the stage and not yet processed.",
		}, []string{"stage"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wheelmq_actor_messages_total", Help: "Messages processed by the stage.",
		}, []string{"stage"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wheelmq_actor_process_seconds",
			Help:    "Time the stage spent processing one message.",
			Buckets: []float64{1e-6, 5e-6, 2e-5, 1e-4, 5e-4, 1e-3, 5e-3, 2e-2, 1e-1, 5e-1, 2},
		}, []string{"stage"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wheelmq_actor_restarts_total", Help: "Restarts of the stage ordered by its supervisor.",
		}, []string{"stage"}),
		stages: map[string]*Stage{},
	}
	if reg != nil {
		reg.MustRegister(m.depth, m.messages, m.seconds, m.restarts)
	}
	return m
}

// Stage is a running, supervised actor with its instruments.
type Stage struct {
	name     string
	pid      *actor.PID
	root     *actor.RootContext
	pending  atomic.Int64
	depth    prometheus.Gauge
	messages prometheus.Counter
	seconds  prometheus.Observer
	restarts prometheus.Counter
}

// Spawn starts an actor named name under guardian (the supervision
// strategy) and wires its metrics. producer must return a fresh instance on
// every call: a restart calls it again.
func (m *Metrics) Spawn(system *actor.ActorSystem, guardian actor.SupervisorStrategy, name string,
	producer actor.Producer) (*Stage, error) {
	s := &Stage{
		name:     name,
		root:     system.Root,
		depth:    m.depth.WithLabelValues(name),
		messages: m.messages.WithLabelValues(name),
		seconds:  m.seconds.WithLabelValues(name),
		restarts: m.restarts.WithLabelValues(name),
	}
	props := actor.PropsFromProducer(producer, actor.WithReceiverMiddleware(s.middleware))
	pid, err := system.Root.WithGuardian(guardian).SpawnNamed(props, name)
	if err != nil {
		return nil, fmt.Errorf("spawn stage %s: %w", name, err)
	}
	s.pid = pid
	m.mu.Lock()
	m.stages[pid.Id] = s
	m.mu.Unlock()
	return s, nil
}

// Restarted counts a restart of the stage whose actor id is id (wire it to
// supervisor.Policy.OnRestart).
func (m *Metrics) Restarted(id string) {
	m.mu.Lock()
	s := m.stages[id]
	m.mu.Unlock()
	if s != nil {
		s.restarts.Inc()
	}
}

func (s *Stage) middleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		switch env.Message.(type) {
		case actor.SystemMessage, actor.AutoReceiveMessage:
			next(c, env)
			return
		}
		s.depth.Set(float64(s.pending.Add(-1)))
		start := time.Now()
		next(c, env)
		s.seconds.Observe(time.Since(start).Seconds())
		s.messages.Inc()
	}
}

// Send delivers msg to the stage; safe from any goroutine, never blocks.
func (s *Stage) Send(msg any) {
	s.depth.Set(float64(s.pending.Add(1)))
	s.root.Send(s.pid, msg)
}

// Name is the stage's stable name.
func (s *Stage) Name() string { return s.name }

// PID is the stage's actor id.
func (s *Stage) PID() *actor.PID { return s.pid }

// Depth is the number of messages sent and not yet processed.
func (s *Stage) Depth() int64 { return s.pending.Load() }

// Stop stops the stage and waits for it to finish its current message.
func (s *Stage) Stop() {
	_ = s.root.StopFuture(s.pid).Wait()
}

// NewSystem creates an actor system whose own logging goes to log, at warn
// level and above (protoactor logs every system start at info).
func NewSystem(log zerolog.Logger) *actor.ActorSystem {
	l := log.With().Str("component", "protoactor").Logger().Level(zerolog.WarnLevel)
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(zerolog.NewSlogHandler(l))
	}))
}
