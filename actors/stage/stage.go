// Package stage gives every wheelmq actor a name, a supervisor, metrics,
// a way to reach itself, and a health state.
//
// A Stage is a spawned protoactor-go actor plus its instruments:
//
//	wheelmq_actor_mailbox_depth{stage}     messages sent but not yet taken
//	wheelmq_actor_messages_total{stage}    messages processed
//	wheelmq_actor_process_seconds{stage}   time spent per message (histogram)
//	wheelmq_actor_restarts_total{stage}    restarts ordered by the supervisor
//	wheelmq_stage_up{stage}                1 while the stage runs, 0 once it is stopped for good
//
// Labels are the stable stage names only (commitlog, dispatch, pull, ...),
// never connection or queue ids. Counting costs two atomics and one
// histogram observation per message, with no allocation: a stage's series
// are resolved once at spawn. The figures are typed counters
// (actors/instrument); Registry.Snapshot reads them, and /metrics reads
// the same through the registry's collector.
//
// Every message to a stage goes through Stage.Send, or through an Inbox
// of the stage (a batched mailbox in front of the actor for a hot message
// type), including the stage's messages to itself: an actor is handed its
// own *Stage when it is made (see Producer) and arms its ticks with
// Stage.NewTimer. Nothing reaches for the actor system's root to send to
// itself, so the depth gauge stays exact. A stage's mailbox runs on a
// goroutine that waits for the next burst instead of exiting after each
// (see workerDispatcher).
//
// # Failure
//
// A message that carries a reply implements Failable. When the stage fails
// while processing such a message, or when it is stopped for good, the
// reply is answered with an error instead of being dropped:
//
//   - a panic in the stage fails the message being processed (protoactor
//     drops it) and re-panics for the supervisor;
//   - a stage retired by its supervisor (Registry.Retire, wired to
//     supervisor.Policy.Retire) comes back as a tombstone that fails every
//     queued and later Failable message with a *DownError naming the stage
//     and the cause; Stage.Send fails them at once without queueing.
//
// Registry.Down lists the retired stages; the broker turns it into its
// health state (/healthz, wheelmq_broker_healthy).
package stage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// Producer makes a fresh actor instance for a stage; it is called again on
// every restart. self is the stage the actor runs as: use it for messages to
// itself and for ticks.
type Producer func(self *Stage) actor.Actor

// Failable is implemented by messages that carry a reply: Fail answers the
// reply with err. It must be safe to call from any goroutine and is called
// at most once per message by the stage layer (and never after the stage
// answered the message itself, which the stage guarantees by not panicking
// after replying).
type Failable interface {
	Fail(err error)
}

// DownError says that a stage was stopped for good.
type DownError struct {
	Stage string
	Cause string
	Since time.Time
}

func (e *DownError) Error() string {
	return fmt.Sprintf("stage %s is down since %s: %s", e.Stage, e.Since.Format(time.RFC3339), e.Cause)
}

// ErrDown matches every *DownError with errors.Is.
var ErrDown = errors.New("stage down")

// Is makes errors.Is(err, ErrDown) true for a *DownError.
func (e *DownError) Is(target error) bool { return target == ErrDown }

// Stage is a running, supervised actor with its instruments.
type Stage struct {
	name     string
	pid      *actor.PID
	root     *actor.RootContext
	pending  atomic.Int64
	down     atomic.Pointer[DownError]
	inst     *series
	onFailed func(msg any, reason any) // test hook; nil in production

	inboxMu sync.Mutex
	inboxes []inboxFailer // bound inboxes, failed by the tombstone; guarded by inboxMu

	// active counts messages being processed (0 or 1: a stage processes
	// one at a time) and finished those processed; see Quiet.
	active   atomic.Int32
	finished atomic.Uint64
	// stopped is closed once the actor has stopped for good (its Stopped
	// message ran; a restart does not close it); see StopWithin.
	stopped     chan struct{}
	stoppedOnce sync.Once
}

// Send delivers msg to the stage; safe from any goroutine, never blocks. On
// a stage that is down, a Failable msg is failed at once and others are
// dropped.
func (s *Stage) Send(msg any) {
	if d := s.down.Load(); d != nil {
		if f, ok := msg.(Failable); ok {
			f.Fail(d)
		}
		return
	}
	s.pending.Add(1)
	s.root.Send(s.pid, msg)
}

// Prewrapped returns msg in the envelope protoactor would wrap it in on
// every delivery (the stages' receive middleware needs one), so that a
// message sent often, such as a kick, costs no allocation: build it once,
// Send it many times. The actor still receives msg itself.
func Prewrapped(msg any) any { return &actor.MessageEnvelope{Message: msg} }

// Name is the stage's stable name.
func (s *Stage) Name() string { return s.name }

// PID is the stage's actor id.
func (s *Stage) PID() *actor.PID { return s.pid }

// Depth is the number of messages sent and not yet processed.
func (s *Stage) Depth() int64 { return s.pending.Load() }

// Down returns why the stage was stopped for good, or nil while it runs.
func (s *Stage) Down() *DownError { return s.down.Load() }

// Stop stops the stage and waits for it to finish its current message.
func (s *Stage) Stop() {
	_ = s.root.StopFuture(s.pid).Wait()
}

// ErrStopTimeout matches the error of a StopWithin whose stage did not stop
// in time.
var ErrStopTimeout = errors.New("stage did not stop in time")

// StopWithin asks the stage to stop and waits until it has: its current
// message finished, its Stopping handler ran (each stage persists its state
// there) and the actor is gone. It returns an error wrapping
// ErrStopTimeout, and naming the stage, when ctx ends first; the stage is
// then still running (stuck in a message or in its Stopping handler) and
// whatever it uses must stay usable. Messages still queued are not
// processed (the commitlog writer answers the appends its inbox holds in
// its Stopping handler). Calling it again, or after Stop, returns at once
// once the stage has stopped.
func (s *Stage) StopWithin(ctx context.Context) error {
	select {
	case <-s.stopped:
		return nil
	default:
	}
	s.root.Stop(s.pid)
	select {
	case <-s.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stage %s: %w: %w", s.name, ErrStopTimeout, ctx.Err())
	}
}

// Stopped reports whether the stage has stopped for good (StopWithin or
// Stop finished it).
func (s *Stage) Stopped() bool {
	select {
	case <-s.stopped:
		return true
	default:
		return false
	}
}

// NewTimer returns a timer that sends messages to this stage.
func (s *Stage) NewTimer() *Timer { return &Timer{s: s} }

// Timer sends one message to its stage after a delay. Arming it again
// replaces the pending message, so a tick left over from an instance that
// was restarted never starts a second chain of ticks. Its methods are safe
// from any goroutine.
type Timer struct {
	s  *Stage
	mu sync.Mutex
	t  *time.Timer // guarded by mu
}

// Arm sends msg to the stage after d, replacing any pending send.
func (t *Timer) Arm(d time.Duration, msg any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.t != nil {
		t.t.Stop()
	}
	t.t = time.AfterFunc(d, func() { t.s.Send(msg) })
}

// Stop cancels the pending send, if any.
func (t *Timer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.t != nil {
		t.t.Stop()
		t.t = nil
	}
}

func (s *Stage) middleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		switch env.Message.(type) {
		case *actor.Stopped:
			next(c, env)
			s.stoppedOnce.Do(func() { close(s.stopped) })
			return
		case actor.SystemMessage, actor.AutoReceiveMessage:
			next(c, env)
			return
		}
		// active rises before pending falls and falls after finished rises,
		// so that a message is always visible to Quiet as pending, active
		// or finished.
		s.active.Add(1)
		s.pending.Add(-1)
		start := time.Now()
		defer func() {
			s.finished.Add(1)
			s.active.Add(-1)
			if r := recover(); r != nil {
				s.failed(env.Message, r)
				panic(r)
			}
		}()
		next(c, env)
		s.inst.seconds.Observe(time.Since(start).Seconds())
		s.inst.messages.Inc()
	}
}

// failed answers the message a panic interrupted.
func (s *Stage) failed(msg any, reason any) {
	if s.onFailed != nil {
		s.onFailed(msg, reason)
	}
	f, ok := msg.(Failable)
	if !ok {
		return
	}
	defer func() {
		// The reply itself may be what failed; the supervisor still gets
		// the original panic.
		_ = recover()
	}()
	f.Fail(fmt.Errorf("stage %s failed while handling %T: %v", s.name, msg, reason))
}

// tombstone is what a retired stage runs: it fails every Failable message.
type tombstone struct{ s *Stage }

func (t *tombstone) Receive(ctx actor.Context) {
	d := t.s.down.Load()
	if d == nil {
		return
	}
	if f, ok := ctx.Message().(Failable); ok {
		f.Fail(d)
	}
	t.s.inboxMu.Lock()
	inboxes := t.s.inboxes
	t.s.inboxMu.Unlock()
	for _, in := range inboxes {
		in.failAll(d)
	}
}

// NewSystem creates an actor system whose own logging goes to log, at warn
// level and above (protoactor logs every system start at info).
func NewSystem(log zerolog.Logger) *actor.ActorSystem {
	l := log.With().Str("component", "protoactor").Logger().Level(zerolog.WarnLevel)
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(zerolog.NewSlogHandler(l))
	}))
}

// FailFunc is embedded in messages that answer a client request and have
// no error path of their own: the sender sets it to answer the request with
// an error when the stage fails or is down. A nil FailFunc does nothing.
type FailFunc func(err error)

// Fail implements Failable.
func (f FailFunc) Fail(err error) {
	if f != nil {
		f(err)
	}
}
