// Package timer runs RocketMQ 5 timer messages (RIP-43) through five
// supervised stages around the timerwheel store, fed and drained by the
// commitlog writer stage:
//
//		commitlog ─► enqueue_get ─► enqueue_put ─► [timerwheel] ─► dequeue_get ─► dequeue_message ─► dequeue_put ─► commitlog
//
//	  - enqueue_get reads the rmq_sys_wheel_timer consume queue from the
//	    store's persisted enqueue position and turns each message into a
//	    timerwheel.Timer (bad ones are counted and skipped: one message can
//	    never stall the pipeline); it also follows the stop records of
//	    recurring timers (StopTopic, stops.go);
//	  - enqueue_put adds each batch to the store (one TimerLog write);
//	  - dequeue_get asks the store for what is due, armed by one timer at
//	    NextDue, and releases batches of up to 4096 (never a timer early: the
//	    store releases by exact millisecond);
//	  - dequeue_message reads the messages and rebuilds them for their real
//	    topic and queue (cancelled timers are counted and dropped);
//	  - dequeue_put writes them back through the commitlog writer, then
//	    acknowledges the batch in order; a flush tick makes acknowledgements
//	    durable (timerwheel.Store.Flush: TimerLog, snapshot, checkpoint).
//
// Restarts: a stage that fails is restarted by its supervisor. The enqueue
// side then resumes from the store's enqueue position (Add skips what it
// already holds). The dequeue side rewinds to the acknowledged position and
// re-releases; dequeue_put first collects which timer messages were already
// written back since the last durable acknowledgement (a CommitLog scan from
// a persisted offset) and skips them, so a replay does not deliver twice.
// Messages in flight between stages carry an epoch; a restart bumps it and
// older messages are dropped. The reading stages (enqueue_get, dequeue_get)
// stamp batches with the epoch they last resumed at, not the current one,
// so a batch read before they processed the restart is dropped too.
//
// Roles (see role.go): dequeue delivers only while Options.Role says
// IsMaster(). On a replica the enqueue side builds the wheel from the
// confirmed log as usual and the dequeue side shadows the master: it
// releases due timers but writes nothing; a batch is acknowledged once the
// written-back copy of each of its timers (identity UNIQ_KEY@TIMER_OUT_MS)
// is in the confirmed log. A role change rewinds the dequeue side: on
// promotion it re-releases what is not acknowledged and writes back only
// the timers whose copy it has not found; on demotion (or fencing) nothing
// more is written back.
package timer

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// Stage names (stable metric labels).
const (
	StageEnqueueGet     = "enqueue_get"
	StageEnqueuePut     = "enqueue_put"
	StageDequeueGet     = "dequeue_get"
	StageDequeueMessage = "dequeue_message"
	StageDequeuePut     = "dequeue_put"
	StageFlush          = "timer_flush"
)

// MaxDequeueWorkers caps Options.DequeueWorkers.
const MaxDequeueWorkers = 8

// DefaultDequeueWorkers is the default number of dequeue_message workers.
const DefaultDequeueWorkers = 2

// DequeueWorker names dequeue_message worker i: "dequeue_message_<i>".
// Faults armed for StageDequeueMessage hit whichever worker comes first.
func DequeueWorker(i int) string { return StageDequeueMessage + "_" + strconv.Itoa(i) }

// StageNames lists the names every timer stage may have (the workers up to
// MaxDequeueWorkers): the stages a timer message needs, for health checks
// that skip names without a stage.
func StageNames() []string {
	names := []string{StageEnqueueGet, StageEnqueuePut, StageDequeueGet}
	for i := range MaxDequeueWorkers {
		names = append(names, DequeueWorker(i))
	}
	return append(names, StageDequeuePut, StageFlush)
}

// Topic is the system topic timer messages wait in; it has one queue, 0.
const Topic = "rmq_sys_wheel_timer"

// ReplayCheckpointKey is the checkpoint entry holding the CommitLog offset
// from which dequeue_put scans for already written-back timer messages.
const ReplayCheckpointKey = "timer_replay_from"

// errInjected is the panic value of an injected fault.
var errInjected = errors.New("timer: injected fault")

// Options configures the timer service.
type Options struct {
	Store *storage.Store
	Wheel *timerwheel.Store
	// Append hands records to the commitlog writer stage.
	Append func(*writer.Append)
	// BatchSize caps a dequeue batch (default 4096).
	BatchSize int
	// DequeueWorkers is how many dequeue_message workers read and rebuild
	// released batches side by side (default DefaultDequeueWorkers, at most
	// MaxDequeueWorkers); dequeue_put writes the batches back and
	// acknowledges them in release order whatever order they come in.
	DequeueWorkers int
	// FlushInterval is how often acknowledgements are made durable
	// (default 20 ms).
	FlushInterval time.Duration
	// PutTimeout is how long dequeue_put waits for the writer before it
	// rewinds and retries (default 10 s).
	PutTimeout time.Duration
	// Faults injects failures in tests; nil in production.
	Faults *Faults
	// Role says whether timers are delivered (IsMaster) or shadowed (a
	// replica); nil: standalone, always delivered.
	Role *role.Holder
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger zerolog.Logger
	// Metrics receives the timer instruments (nil: not exported).
	Metrics *Metrics
}

// Service owns the state that survives stage restarts.
type Service struct {
	opts    Options
	workers []string // dequeue_message worker names
	stages  map[string]*stage.Stage
	mu      sync.Mutex
	seen    map[string]bool // stages that started at least once (guarded by mu)

	// stops is the set of stopped recurring timers (stops.go).
	stops stopSet

	enqEpoch atomic.Uint64
	deqEpoch atomic.Uint64
	enqKick  atomic.Bool // an enqueue kick is queued
	deqKick  atomic.Bool // a dequeue kick is queued
	dirty    atomic.Bool // the wheel has unflushed changes
	enqInFly atomic.Int64
	deqInFly atomic.Int64
	// replayPin is the lowest CommitLog offset dequeue_put's replay scan
	// may need after a crash (math.MaxInt64: none); see ReplayPin.
	replayPin atomic.Int64
	// deqInFlyTimers counts the timers of those batches.
	deqInFlyTimers atomic.Int64
	// failed is set while the timer store is failed (timerwheel.ErrFailed):
	// the stages pause, timer_flush reopens it.
	failed atomic.Bool
	// acks are the acknowledged batches whose write-backs may not be
	// durable yet (dequeue_put appends, timer_flush drops).
	acks ackLog
	// ackedOff is where dequeue_put's replay scan would start if the
	// acknowledgements made so far were durable: the first write-back of
	// the oldest batch not yet acknowledged (-1 until dequeue_put starts).
	// dequeue_put writes it, timer_flush persists it.
	ackedOff atomic.Int64
	// replayMu orders the writes of the persisted replay scan start
	// (timer_flush's, a truncation's clamp), so a flush that read ackedOff
	// before a truncation cannot write it back above the cut.
	replayMu sync.Mutex
	// shadowing is !Role.Get().IsMaster(), as the dequeue side last
	// learnt it (the zero value: a master).
	shadowing atomic.Bool
}

// ReplayPin is the lowest CommitLog offset that must stay for the timer
// dequeue side to recognise, after a crash, what it already wrote back:
// the start of the oldest write-back not yet covered by a durable
// acknowledgement (math.MaxInt64 when everything acknowledged is durable).
// CommitLog retention keeps everything from there on. Safe from any
// goroutine.
func (s *Service) ReplayPin() int64 { return s.replayPin.Load() }

// Start spawns the timer stages under guardian.
func Start(system *actor.ActorSystem, metrics *stage.Registry, guardian actor.SupervisorStrategy, opts Options) (*Service, error) {
	if opts.Store == nil || opts.Wheel == nil || opts.Append == nil {
		return nil, errors.New("timer service: Store, Wheel and Append are required")
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 4096
	}
	if opts.DequeueWorkers <= 0 {
		opts.DequeueWorkers = DefaultDequeueWorkers
	}
	opts.DequeueWorkers = min(opts.DequeueWorkers, MaxDequeueWorkers)
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 20 * time.Millisecond
	}
	if opts.PutTimeout <= 0 {
		opts.PutTimeout = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	s := &Service{opts: opts, stages: map[string]*stage.Stage{}, seen: map[string]bool{}}
	s.holdDurableAck()
	s.replayPin.Store(math.MaxInt64)
	s.ackedOff.Store(-1)
	s.shadowing.Store(!opts.Role.Get().IsMaster())
	producers := []struct {
		name string
		p    stage.Producer
	}{
		{StageEnqueuePut, func(*stage.Stage) actor.Actor { return &enqueuePut{svc: s} }},
		{StageEnqueueGet, func(self *stage.Stage) actor.Actor { return &enqueueGet{svc: s, timer: self.NewTimer()} }},
		{StageDequeuePut, func(self *stage.Stage) actor.Actor { return &dequeuePut{svc: s, timer: self.NewTimer()} }},
		{StageDequeueGet, func(self *stage.Stage) actor.Actor { return &dequeueGet{svc: s, timer: self.NewTimer()} }},
		{StageFlush, func(self *stage.Stage) actor.Actor { return &timerFlush{svc: s, timer: self.NewTimer()} }},
	}
	for i := range opts.DequeueWorkers {
		name := DequeueWorker(i)
		s.workers = append(s.workers, name)
		// Spawned before dequeue_get, which sends to them.
		producers = slices.Insert(producers, len(producers)-2, struct {
			name string
			p    stage.Producer
		}{name, func(*stage.Stage) actor.Actor { return &dequeueMessage{svc: s, name: name} }})
	}
	for _, p := range producers {
		st, err := metrics.Spawn(system, guardian, p.name, p.p)
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("timer service: %w", err)
		}
		s.mu.Lock()
		s.stages[p.name] = st
		s.mu.Unlock()
	}
	if opts.Role != nil {
		opts.Role.Subscribe(s.roleChanged)
	}
	s.KickEnqueue()
	s.KickDequeue()
	return s, nil
}

// Stage returns one of the timer stages by name (nil for other names).
func (s *Service) Stage(name string) *stage.Stage { return s.stage(name) }

func (s *Service) stage(name string) *stage.Stage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stages[name]
}

func (s *Service) send(name string, msg any) {
	if st := s.stage(name); st != nil {
		st.Send(msg)
	}
}

// KickEnqueue tells enqueue_get that the timer queue grew (coalesced).
func (s *Service) KickEnqueue() {
	if s.enqKick.CompareAndSwap(false, true) {
		s.send(StageEnqueueGet, enqKick{})
	}
}

// KickDequeue tells dequeue_get to look at the wheel again (coalesced).
func (s *Service) KickDequeue() {
	if s.deqKick.CompareAndSwap(false, true) {
		s.send(StageDequeueGet, deqKick{})
	}
}

// started records that a stage started and reports whether this is a
// restart.
func (s *Service) started(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	again := s.seen[name]
	s.seen[name] = true
	return again
}

// restartEnqueue invalidates in-flight enqueue batches and makes
// enqueue_get resume from the store's position.
func (s *Service) restartEnqueue(why string) {
	s.enqEpoch.Add(1)
	s.enqInFly.Store(0)
	s.opts.Logger.Warn().Str("reason", why).Msg("timer enqueue side restarting from its persisted position")
	s.send(StageEnqueueGet, enqResume{})
}

// restartDequeue invalidates in-flight dequeue batches, rewinds the wheel
// to the acknowledged position and makes dequeue_put rebuild its replay set.
func (s *Service) restartDequeue(why string) {
	s.deqEpoch.Add(1)
	s.opts.Logger.Warn().Str("reason", why).Msg("timer dequeue side rewinding to its acknowledged position")
	s.send(StageDequeuePut, deqResync{})
	s.send(StageDequeueGet, deqRewind{})
}

// storeFailed handles an error from the timer store: a failed store
// (timerwheel.ErrFailed, after a write or sync error such as a full disk)
// pauses the timer stages until timer_flush has reopened it, as the
// CommitLog pauses sends; any other error fails the calling stage (a panic
// its supervisor handles).
func (s *Service) storeFailed(stageName string, err error) {
	if !errors.Is(err, timerwheel.ErrFailed) {
		panic(err)
	}
	if s.failed.CompareAndSwap(false, true) {
		s.opts.Metrics.StoreFailed.Set(1)
		s.opts.Logger.Error().Err(err).Str("stage", stageName).
			Msg("timer store failed: timers paused until it reopens")
	}
}

// holdDurableAck bounds the wheel's durable acknowledged position to the
// one it has now (its recovered, durable one): from here on only
// timer_flush moves it, batch by batch as their write-backs become durable
// (an Ack that dequeue_put has made but not yet logged in acks is never
// made durable early).
func (s *Service) holdDurableAck() {
	s.opts.Wheel.LimitDurableAck(s.opts.Wheel.Checkpoint().Acked)
}

// paused reports whether the timer stages wait for the store's reopen.
func (s *Service) paused() bool { return s.failed.Load() }

// reopened resumes the timer stages after timer_flush reopened the store:
// both sides start again from its durable positions, as after a restart.
func (s *Service) reopened() {
	s.acks.reset()
	s.holdDurableAck()
	s.failed.Store(false)
	s.opts.Metrics.StoreFailed.Set(0)
	s.restartEnqueue("timer store reopened")
	s.restartDequeue("timer store reopened")
}

// Stop stops the stages in pipeline order and flushes the wheel.
func (s *Service) Stop() {
	names := append([]string{StageEnqueueGet, StageEnqueuePut, StageDequeueGet}, s.workers...)
	for _, name := range append(names, StageDequeuePut, StageFlush) {
		if st := s.stage(name); st != nil {
			st.Stop()
		}
	}
	if err := s.opts.Wheel.Flush(); err != nil {
		s.opts.Logger.Error().Err(err).Msg("final timer flush failed")
	}
}

// Faults injects one panic into a stage's next batch (tests only).
type Faults struct {
	mu    sync.Mutex
	armed map[string]int
	errs  map[string]error // ArmError: the error of the next fault
}

// ArmError makes the named stage fail on its next batch with a panic
// wrapping err (e.g. a corruption error, which stops a stage for good).
func (f *Faults) ArmError(stage string, err error) {
	f.mu.Lock()
	if f.errs == nil {
		f.errs = map[string]error{}
	}
	f.errs[stage] = err
	f.mu.Unlock()
	f.Arm(stage)
}

// Arm makes the named stage fail mid-batch on its next batch.
func (f *Faults) Arm(stage string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.armed == nil {
		f.armed = map[string]int{}
	}
	f.armed[stage]++
}

// Pending returns how many faults armed for stage have not fired yet.
func (f *Faults) Pending(stage string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.armed[stage]
}

// Hit panics if a fault is armed for stage (a no-op on a nil Faults).
func (f *Faults) Hit(stage string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	n := f.armed[stage]
	cause := errInjected
	if n > 0 {
		f.armed[stage] = n - 1
		if err, ok := f.errs[stage]; ok {
			cause = err
			delete(f.errs, stage)
		}
	}
	f.mu.Unlock()
	if n > 0 {
		panic(fmt.Errorf("%s: injected: %w", stage, cause))
	}
}
