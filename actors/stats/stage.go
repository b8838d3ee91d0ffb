package stats

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/stage"
)

// StageName is the stage's stable name.
const StageName = "stats"

// Windows are the spans RocketMQ reports rates over.
var Windows = [3]time.Duration{10 * time.Second, time.Minute, 10 * time.Minute}

// keyWindow is the span of the per-topic and per-group rates (RocketMQ's
// per-minute figures).
const keyWindow = time.Minute

// Rates are messages per second over Windows.
type Rates [3]float64

// Snapshot is what the stage publishes every second.
type Snapshot struct {
	// At is when the snapshot was taken.
	At time.Time
	// Put, GetTransferred, GetFound, GetMiss and GetTotal are rates over
	// Windows: messages stored, messages served, pulls that found messages,
	// pulls that found none, all pulls.
	Put, GetTransferred, GetFound, GetMiss, GetTotal Rates
	// TimerEnqueue and TimerDequeue are the timer wheel's adds and releases
	// per second over the first window.
	TimerEnqueue, TimerDequeue float64
	// TopicPut is messages stored per second per topic, over a minute.
	TopicPut map[string]float64
	// GroupGet is messages served per second per group and topic, over a
	// minute.
	GroupGet map[GroupTopic]float64
	// PutTotal and GetTotal are message counts since the start; the
	// Morning figures are the counts at the last two local midnights
	// (0 before the first), as mqadmin's clusterList -m reads them.
	PutTotal, GetTotalMsgs               int64
	PutTodayMorning, PutYesterdayMorning int64
	GetTodayMorning, GetYesterdayMorning int64
}

// View publishes the latest snapshot; safe from any goroutine.
type View struct{ p atomic.Pointer[Snapshot] }

// Load returns the latest snapshot (an empty one before the first tick).
func (v *View) Load() *Snapshot {
	if s := v.p.Load(); s != nil {
		return s
	}
	return &Snapshot{TopicPut: map[string]float64{}, GroupGet: map[GroupTopic]float64{}}
}

// Options configures the stage.
type Options struct {
	Counters *Counters
	View     *View
	// Timer, when set, returns the timer wheel's running totals of timers
	// added and released.
	Timer func() (enqueued, dequeued uint64)
	// Every is the sampling period (default 1 s).
	Every time.Duration
	// Now is the clock (default time.Now; tests inject one).
	Now func() time.Time
}

type tick struct{}

// Sampler is the actor.
type Sampler struct {
	opts  Options
	timer *stage.Timer
	ring  []sample // oldest first, at most len(ringFor(Windows[2]))+1
	keys  *keyRings
	day   dayTotals
}

// Producer returns the actor producer. A restarted sampler starts its
// windows afresh (the counters are kept).
func Producer(opts Options) stage.Producer {
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return func(self *stage.Stage) actor.Actor { return &Sampler{opts: opts, timer: self.NewTimer()} }
}

// Receive implements actor.Actor.
func (s *Sampler) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		s.keys = newKeyRings(int(keyWindow/s.opts.Every) + 1)
		s.day = dayTotals{}
		s.sample()
		s.timer.Arm(s.opts.Every, tick{})
	case tick:
		s.sample()
		s.timer.Arm(s.opts.Every, tick{})
	case *actor.Stopping, *actor.Restarting:
		s.timer.Stop()
	}
}
