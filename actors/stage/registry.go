package stage

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/actors/instrument"
)

// Registry spawns stages, counts their figures (one series per stage
// name, kept across a respawn under the same name) and knows which stages
// are down. Registry.Snapshot reads the figures; /metrics reads the same
// ones through the registry's collector (snapshot.go).
type Registry struct {
	mu     sync.Mutex
	stages map[string]*Stage  // by actor id; guarded by mu
	series map[string]*series // by stage name; guarded by mu
}

// series are one stage name's counted figures.
type series struct {
	messages instrument.Counter
	restarts instrument.Counter
	seconds  *instrument.Histogram
}

// processBounds are the buckets of wheelmq_actor_process_seconds.
var processBounds = []float64{1e-6, 5e-6, 2e-5, 1e-4, 5e-4, 1e-3, 5e-3, 2e-2, 1e-1, 5e-1, 2}

// NewRegistry makes a registry and registers its collector with reg (nil:
// not registered).
func NewRegistry(reg prometheus.Registerer) *Registry {
	r := &Registry{stages: map[string]*Stage{}, series: map[string]*series{}}
	if reg != nil {
		reg.MustRegister(newCollector(r))
	}
	return r
}

// seriesOf returns name's series, made on first use.
func (r *Registry) seriesOf(name string) *series {
	r.mu.Lock()
	defer r.mu.Unlock()
	se := r.series[name]
	if se == nil {
		se = &series{seconds: instrument.NewHistogram(processBounds)}
		r.series[name] = se
	}
	return se
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
		inst:    r.seriesOf(name),
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
