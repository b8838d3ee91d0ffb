package rates

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/stage"
)

// StageName is the sampler stage's stable name.
const StageName = "rates"

// Options configures the sampler.
type Options struct {
	// Rings receives the readings; they outlive a restart of the stage.
	Rings *Rings
	// Read reads the counters; it must not block (atomics and snapshots
	// only).
	Read func() Reading
}

type tick struct{}

// Sampler is the actor: a reading when it starts and one every
// Rings.Every.
type Sampler struct {
	opts  Options
	timer *stage.Timer
}

// Producer returns the sampler's producer.
func Producer(opts Options) stage.Producer {
	return func(self *stage.Stage) actor.Actor { return &Sampler{opts: opts, timer: self.NewTimer()} }
}

// Receive implements actor.Actor.
func (s *Sampler) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started, tick:
		s.opts.Rings.Add(s.opts.Read())
		s.timer.Arm(s.opts.Rings.Every(), tick{})
	case *actor.Stopping, *actor.Restarting:
		s.timer.Stop()
	}
}
