package stage

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
)

// Registry spawns stages, holds their instrument families and knows which
// stages are down.
type Registry struct {
	depth    *prometheus.GaugeVec
	messages *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
	restarts *prometheus.CounterVec
	up       *prometheus.GaugeVec

	mu     sync.Mutex
	stages map[string]*Stage // by actor id; guarded by mu
}

// instruments are one stage's label-bound series.
type instruments struct {
	depth    prometheus.Gauge
	messages prometheus.Counter
	seconds  prometheus.Observer
	restarts prometheus.Counter
	up       prometheus.Gauge
}

// NewRegistry creates the instrument families and registers them with reg
// (nil: not registered).
func NewRegistry(reg prometheus.Registerer) *Registry {
	r := &Registry{
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
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "wheelmq_stage_up", Help: "1 while the stage runs; 0 once its supervisor stopped it for good.",
		}, []string{"stage"}),
		stages: map[string]*Stage{},
	}
	if reg != nil {
		reg.MustRegister(r.depth, r.messages, r.seconds, r.restarts, r.up)
	}
	return r
}

// Spawn starts an actor named name under guardian (the supervision
// strategy) and wires its metrics. producer must return a fresh instance on
// every call: a restart calls it again.
func (r *Registry) Spawn(system *actor.ActorSystem, guardian actor.SupervisorStrategy, name string,
	producer Producer) (*Stage, error) {
	s := &Stage{
		name:    name,
		root:    system.Root,
		stopped: make(chan struct{}),
		inst: instruments{
			depth:    r.depth.WithLabelValues(name),
			messages: r.messages.WithLabelValues(name),
			seconds:  r.seconds.WithLabelValues(name),
			restarts: r.restarts.WithLabelValues(name),
			up:       r.up.WithLabelValues(name),
		},
	}
	props := actor.PropsFromProducer(func() actor.Actor {
		if s.down.Load() != nil {
			return &tombstone{s: s}
		}
		return producer(s)
	}, actor.WithReceiverMiddleware(s.middleware), actor.WithDispatcher(newWorkerDispatcher()))
	// The PID is known before the actor starts: an actor may send to itself
	// (or be sent to) from its Started handler, before SpawnNamed returns.
	s.pid = system.NewLocalPID(name)
	s.inst.up.Set(1)
	r.mu.Lock()
	r.stages[name] = s
	r.mu.Unlock()
	pid, err := system.Root.WithGuardian(guardian).SpawnNamed(props, name)
	if err == nil && pid.Id != name {
		err = fmt.Errorf("got actor id %q", pid.Id)
	}
	if err != nil {
		r.mu.Lock()
		if r.stages[name] == s {
			delete(r.stages, name)
		}
		r.mu.Unlock()
		return nil, fmt.Errorf("spawn stage %s: %w", name, err)
	}
	return s, nil
}

func (r *Registry) byID(id string) *Stage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stages[id]
}

// Restarted counts a restart of the stage whose actor id is id (wire it to
// supervisor.Policy.OnRestart).
func (r *Registry) Restarted(id string) {
	if s := r.byID(id); s != nil {
		s.inst.restarts.Inc()
	}
}

// Retire marks the stage whose actor id is id as down for reason and
// reports whether the stage layer takes it over: the supervisor then
// restarts it into a tombstone that fails every request it holds (wire it
// to supervisor.Policy.Retire).
func (r *Registry) Retire(id string, reason any) bool {
	s := r.byID(id)
	if s == nil {
		return false
	}
	s.down.CompareAndSwap(nil, &DownError{Stage: s.name, Cause: fmt.Sprint(reason), Since: time.Now()})
	s.inst.up.Set(0)
	return true
}

// Down lists the stages stopped for good, by name.
func (r *Registry) Down() []*DownError {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*DownError
	for _, s := range r.stages {
		if d := s.down.Load(); d != nil {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Stage < out[j].Stage })
	return out
}
