// Package txcheck is the transaction stage: the single owner of the state
// of RocketMQ transactional messages on a broker.
//
// A producer's half (prepared) message is stored by the send path in
// RMQ_SYS_TRANS_HALF_TOPIC queue 0, its real topic and queue kept in
// REAL_TOPIC / REAL_QID, invisible to consumers. This stage then:
//
//   - reads every half message (kicked when the half queue grows) and keeps
//     the open ones in memory;
//   - serves END_TRANSACTION (End): a commit writes the real message (timer
//     properties honoured at that moment: a committed timer message then
//     waits in the timer wheel) and an op record in
//     RMQ_SYS_TRANS_OP_HALF_TOPIC; a rollback writes the op record only. Both
//     are idempotent: the same end again changes nothing, a conflicting one
//     is refused;
//   - checks: an open transaction older than Timeout (or its
//     CHECK_IMMUNITY_TIME_IN_SECONDS) gets CHECK_TRANSACTION_STATE sent to a
//     live connection of its producer group (through the clients stage),
//     again every CheckInterval; after MaxChecks delivered checks it is
//     given up: a copy goes to TRANS_CHECK_MAX_TIME_TOPIC (counted in
//     wheelmq_transaction_discarded_total) and an op record ends it.
//
// # Durability
//
// Every end is a CommitLog record: the committed message itself (sysFlag
// COMMIT, PREPAREDTXOFFSET = the half message's CommitLog offset), the
// discard copy (PREPAREDTXOFFSET likewise), or the op record. The stage
// persists its state (config/transactions.json, storage/meta
// TransactionState: next half offset, open transactions with their check
// counts, and ScanFrom) every CheckpointInterval when it changed. ScanFrom
// is a CommitLog offset below every end the stage started and had not
// persisted yet; on (re)start the stage re-reads the CommitLog from there
// and applies the ends it finds. So a crash at any point loses no committed
// message and delivers no rolled-back one: an end either reached the
// CommitLog (and is found) or not (and the transaction is still open, to be
// ended again or checked). A commit is never written twice for one half
// message by one broker run; across a crash it can only be written again if
// the end's own record was lost, which the scan rules out.
//
// After a supervisor restart, answers of the writer to appends of the
// previous instance still arrive; they are applied like scanned records.
//
// Watermark publishes the smallest CommitLog offset an open transaction
// (or the restart scan) still needs, for retention.
package txcheck

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/wirecode"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
)

// StageName is the stage's stable name.
const StageName = "transaction"

// Outcome is how a transaction ended.
type Outcome uint8

// Outcomes.
const (
	Commit Outcome = iota + 1
	Rollback
	// Discard: given up after MaxChecks checks.
	Discard
)

// String names the outcome (metric label, op record property).
func (o Outcome) String() string {
	switch o {
	case Commit:
		return "commit"
	case Rollback:
		return "rollback"
	case Discard:
		return "discard"
	}
	return "unknown"
}

func parseOutcome(s string) Outcome {
	for _, o := range []Outcome{Commit, Rollback, Discard} {
		if o.String() == s {
			return o
		}
	}
	return 0
}

// End is END_TRANSACTION (37) with COMMIT or ROLLBACK, checked by the
// router. Reply is called once, from the stage's goroutine.
type End struct {
	ProducerGroup string
	// HalfOffset is the request's tranStateTableOffset: the half message's
	// offset in the half queue.
	HalfOffset int64
	// CommitLogOffset is where the half message is stored.
	CommitLogOffset int64
	// Commit: commit (true) or roll back (false).
	Commit bool
	// FromCheck: the producer answers a CHECK_TRANSACTION_STATE.
	FromCheck bool
	// Authorize, when set, decides with the half message's topic
	// (REAL_TOPIC) whether the requester may end it (the ACL: PUB on that
	// topic); a code other than 0 is answered as it is, nothing changed.
	Authorize func(topic string) (code int32, remark string)
	Reply     func(code int32, remark string)
}

// Fail implements stage.Failable.
func (e *End) Fail(err error) { e.Reply(wirecode.SystemError, err.Error()) }

// Kicker wakes the stage when the half queue grew, coalescing wake-ups.
type Kicker struct {
	stage   atomic.Pointer[stage.Stage]
	pending atomic.Bool
}

// Kick asks the stage to read new half messages; safe from any goroutine.
func (k *Kicker) Kick() {
	s := k.stage.Load()
	if s != nil && k.pending.CompareAndSwap(false, true) {
		s.Send(kick{})
	}
}

// Watermark is the smallest CommitLog offset the transaction stage still
// needs: the half messages of open transactions and the start of its
// restart scan. Safe from any goroutine; -1 until the stage started.
type Watermark struct{ v atomic.Int64 }

// NewWatermark returns a Watermark that says "not started" (-1).
func NewWatermark() *Watermark {
	w := &Watermark{}
	w.v.Store(-1)
	return w
}

// Load returns the offset (-1 before the stage started).
func (w *Watermark) Load() int64 { return w.v.Load() }

// Options configures the stage.
type Options struct {
	Store *storage.Store
	// StatePath is the state file (storage.Store.TransactionsPath).
	StatePath string
	// BrokerName goes into CHECK_TRANSACTION_STATE (bname).
	BrokerName string
	// Append hands records to the commitlog writer stage.
	Append func(*writer.Append)
	// ToProducer hands a request for a producer group to the clients stage.
	ToProducer func(*clients.SendToProducer)
	// EnsureTopic creates a 1-queue topic if missing (the discard topic).
	EnsureTopic func(name string)
	// Timer is how committed timer messages are planned.
	Timer timer.Limits
	// Timeout is the minimum age before a first check (default 6 s).
	Timeout time.Duration
	// CheckInterval is the pause between two checks of one transaction
	// (default 60 s).
	CheckInterval time.Duration
	// MaxChecks is how many delivered checks a transaction gets before it
	// is given up (default 15).
	MaxChecks int
	// Live, when set, returns Timeout, CheckInterval and MaxChecks in
	// force instead (run-time settings, read whenever a check is planned
	// or counted; a check already planned keeps its time).
	Live func() Tuning
	// Tick is how often due checks are looked for and the state is
	// persisted when it changed (default 1 s).
	Tick time.Duration
	// Kicker is bound to the stage (the pipeline kicks it on half-queue
	// arrivals).
	Kicker *Kicker
	// Watermark receives the smallest CommitLog offset still needed (may
	// be nil).
	Watermark *Watermark
	// Role, when set, makes the checks and give-ups master-only: on a
	// replica, or a fenced master, half messages are still read (the state
	// follows the log) but no check is sent and nothing is given up
	// (nil: standalone, always checks).
	Role *role.Holder
	// Metrics (nil: not exported).
	Metrics *Metrics
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger zerolog.Logger
}

// Tuning is the part of Options that can change while the stage runs.
type Tuning struct {
	Timeout       time.Duration
	CheckInterval time.Duration
	MaxChecks     int
}

// tuning returns the Tuning in force.
func (s *Stage) tuning() Tuning {
	if s.opts.Live != nil {
		return s.opts.Live()
	}
	return Tuning{Timeout: s.opts.Timeout, CheckInterval: s.opts.CheckInterval, MaxChecks: s.opts.MaxChecks}
}

// shared survives restarts of the stage.
type shared struct{ epoch atomic.Uint64 }

// Producer returns the stage's actor producer.
func Producer(opts Options) stage.Producer {
	if opts.Timeout <= 0 {
		opts.Timeout = 6 * time.Second
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = 60 * time.Second
	}
	if opts.MaxChecks <= 0 {
		opts.MaxChecks = 15
	}
	if opts.Tick <= 0 {
		opts.Tick = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	if opts.Kicker == nil {
		opts.Kicker = &Kicker{}
	}
	sh := &shared{}
	return func(self *stage.Stage) actor.Actor {
		opts.Kicker.stage.Store(self)
		return &Stage{opts: opts, self: self, sh: sh, timer: self.NewTimer()}
	}
}

// messages to itself
type (
	kick struct{}
	tick struct{}
	// written is the writer's answer to one of the stage's appends.
	written struct {
		epoch   uint64
		id      uint64 // the ending
		q       int64
		outcome Outcome
		step    step
		res     writer.Result
	}
	// inspect runs reply on the stage's goroutine (tests look at the
	// state through it).
	inspect struct{ reply func(*Stage) }
	// checkSent is the clients stage's answer to a check.
	checkSent struct {
		epoch  uint64
		q      int64
		client string
	}
)

// step is which record of an end a written answers.
type step uint8

const (
	// stepFinal is the committed message or the discard copy.
	stepFinal step = iota + 1
	// stepOp is the op record.
	stepOp
)

// halfTx is one open transaction.
type halfTx struct {
	q, cl      int64 // half-queue and CommitLog offsets
	size       int32
	group      string // PGROUP
	storeMs    int64
	immunityMs int64
	checks     int32
	nextCheck  int64 // ms
	checking   bool  // a check is with the clients stage
	ending     *ending
}

// ending is an end in progress.
type ending struct {
	id      uint64
	outcome Outcome
	waiters []func(int32, string)
	floor   int64 // CommitLog end when its first record was sent
}

// recentCap bounds the outcomes remembered for idempotent answers.
const recentCap = 1 << 16

// Stage is the actor.
type Stage struct {
	opts  Options
	self  *stage.Stage
	sh    *shared
	timer *stage.Timer
	epoch uint64

	halfNext   int64
	pending    map[int64]*halfTx
	endedAhead map[int64]bool
	inflight   map[uint64]int64 // ending id -> floor
	// undurable are transactions ended by records not yet durable
	// (storage.DurableEnd): the persisted state keeps them open until
	// they are, so that a crash that loses the end leaves them checked
	// again rather than lost.
	undurable []undurableEnd
	nextID    uint64
	// scanHalfEnd is, during the restart scan, one past the highest half
	// queue offset the CommitLog holds: an op record naming an offset at
	// or above it ends a half message a crash took (valid while
	// scanningRestart).
	scanHalfEnd     int64
	scanningRestart bool

	recent      map[int64]Outcome // outcomes of recent ends, for repeated END_TRANSACTION
	recentOrder []int64           // ring of recent keys
	recentAt    int

	// restartFloor holds ScanFrom down after a supervisor restart until the
	// writer answered an append of this instance (then every append of the
	// previous one was answered too) or restartUntil passed.
	restartFloor int64
	restartUntil time.Time

	dirty    bool  // the state changed since it was last persisted
	scanFrom int64 // ScanFrom last persisted
}

// Receive implements actor.Actor.
func (s *Stage) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.start()
	case kick:
		s.opts.Kicker.pending.Store(false)
		if more := s.readHalf(); more {
			s.opts.Kicker.Kick()
		}
	case *End:
		s.handleEnd(m)
	case *written:
		s.onWritten(m)
	case *checkSent:
		s.onCheckSent(m)
	case inspect:
		m.reply(s)
	case tick:
		if s.opts.Role.Get().IsMaster() {
			s.checks()
		}
		s.checkpoint(false)
		s.timer.Arm(s.opts.Tick, tick{})
	case *actor.Stopping:
		s.timer.Stop()
		s.checkpoint(true)
	case *actor.Restarting:
		s.timer.Stop()
	}
}

func (s *Stage) now() time.Time { return s.opts.Now() }
