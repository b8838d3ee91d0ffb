// Package writer is the CommitLog writer stage: the single writer of the
// CommitLog.
//
// Producers' messages arrive already encoded in RocketMQ's stored-message
// layout (the send path encodes them on the event loop). Appends reach the
// writer through its Inbox (stage.Inbox: a batched mailbox in front of the
// actor, one protoactor message per batch; Appends sent with Stage.Send are
// taken too): every Append queued when the writer gets to it is written with
// one CommitLog write (write batching; a failed combined write is retried
// Append by Append so one bad request fails alone). It assigns each record
// its consume-queue offset, and answers:
//
//   - async flush (default): right after the append (the data is in the page
//     cache and visible to readers); a flusher goroutine of the writer's
//     fsyncs every FlushInterval beside it (CommitLog.Sync runs alongside
//     Append), so a long fsync of much dirty data never holds appends up;
//   - sync flush: after an fsync (group commit): the writer fsyncs once per
//     batch, after writing it, and then answers every append of it; what
//     arrives during the fsync waits in the inbox and makes the next batch,
//     so under load each fsync covers everything that came during the one
//     before. The fsync runs on the writer's goroutine: one hop fewer than
//     handing it to another goroutine, and the answers leave from there.
//
// The writer never panics on a failed append: it answers the error (so no
// request is silently dropped) and the CommitLog rolls the failed batch back.
// Every Append it takes is answered exactly once, from one place
// (Writer.reply), which drops the writer's reference to it first: what the
// writer knows of a drain's appends is kept in its own slots, never in the
// Append, so a sender may recycle an Append from its Reply.
//
// On (re)start it rebuilds its queue-offset table from the consume queues
// plus a scan of the CommitLog records that are not dispatched yet.
//
// A failed fsync (or a failed rollback) leaves the CommitLog in its sticky
// failed state, where it refuses every write. The writer then answers what
// it holds with that error and fails on purpose, so that its supervisor
// restarts it; the new instance finds the log failed in its Started handler
// and reopens it (commitlog.CommitLog.Reopen: new file handles, tail
// recovery from the flushed offset, sticky error cleared), and sends are
// taken again. If the reopen fails, or its recovery cut records readers had
// already seen, the writer panics with supervisor.ErrFatal: it is stopped
// for good, the stage layer retires it (sends are refused with the cause,
// /healthz turns 503) and the log says why; restarting the process runs the
// full recovery.
//
// A panic on the flusher goroutine does not kill the process either: the
// flusher recovers it and hands it to the writer, which fails with it in
// its actor; the supervisor restarts the writer (counted in
// wheelmq_actor_restarts_total) and the new instance starts a new flusher.
// The writer stops its flusher, and waits for it, whenever it stops or
// restarts.
package writer

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/storage"
)

// StageName is the writer's stable stage name.
const StageName = "commitlog"

// FlushMode says when a send is answered.
type FlushMode int

const (
	// FlushAsync answers after the append; fsync happens periodically.
	FlushAsync FlushMode = iota
	// FlushSync answers after the data is fsynced (group commit).
	FlushSync
)

// ParseFlushMode parses "async" or "sync".
func ParseFlushMode(s string) (FlushMode, error) {
	switch s {
	case "async":
		return FlushAsync, nil
	case "sync":
		return FlushSync, nil
	}
	return 0, fmt.Errorf("flush mode %q: want async or sync", s)
}

// String names the mode.
func (m FlushMode) String() string {
	if m == FlushSync {
		return "sync"
	}
	return "async"
}

// QueueKey names one consume queue.
type QueueKey struct {
	Topic   string
	QueueID int32
}

// Append asks the writer to store Records (encoded stored-message records of
// one topic and queue) and to call Reply once with the outcome.
//
// An Append is the sender's again as soon as Reply is called: the writer
// keeps what it knows about a drain's appends (stored or not, the result)
// in its own slots, answers each append from one place (Writer.reply),
// which forgets the Append before it calls Reply, and never touches it
// after. A sender may therefore recycle an Append from its Reply (the
// router's fast path pools them).
type Append struct {
	Key     QueueKey
	Records [][]byte
	// Reply is called from the writer's goroutine; it must not block.
	Reply func(Result)
	// Kind says why the records are stored (statistics: only client sends
	// are messages in); the zero value is a client's send.
	Kind stats.Kind
	// Topic, when set, is the topic the records count under when it is
	// not Key.Topic (a delayed send stored in the timer's topic counts
	// under its real topic), and MsgType their RocketMQ message type
	// ("Delay", "Transaction"; "": Normal).
	Topic, MsgType string

	one [1]int64 // Result.Offsets of a one-record append
}

// Fail implements stage.Failable: it answers a with err. The stage layer
// calls it for appends the writer never took (queued for a stage that is
// down); the writer answers the appends it took itself, once each.
func (a *Append) Fail(err error) {
	a.Reply(Result{Err: err})
}

// Reset readies a for reuse (a sender that pools its Appends calls it
// before filling one in again): it clears what the writer left in it.
func (a *Append) Reset() {
	a.one = [1]int64{}
	a.Kind, a.Topic, a.MsgType = stats.KindClient, "", ""
}

// Result is the outcome of an Append.
type Result struct {
	// Offsets are the CommitLog offsets of the records. For a one-record
	// append they live in the Append: valid until it is reused.
	Offsets []int64
	// QueueOffset is the consume-queue offset of the first record.
	QueueOffset int64
	// Err is set when nothing was stored.
	Err error
	// Out, when not nil, collects the answers of a batch: a Reply that
	// answers a client queues its frame there (the broker's is
	// netloop.Outbox: see Options.NewBatch) and the writer flushes it once
	// after the batch, so that every connection is written once.
	Out Batch
}

// Batch collects the answers a drain's Replies queue for their clients;
// the writer calls Flush once the drain is answered. The writer knows
// nothing of what it holds: the front door that made it does (the remoting
// router's is netloop.Outbox, which writes each connection once).
type Batch interface {
	Flush()
}

// Inbox is the writer's batched mailbox (see stage.Inbox).
type Inbox = stage.Inbox[*Append]

// NewInbox returns the inbox to give the writer in Options and to Push
// Appends to.
func NewInbox() *Inbox { return stage.NewInbox[*Append](drainNow{}) }

// Options configures the writer stage.
type Options struct {
	Store *storage.Store
	// NewBatch makes the writer's answer batch (Result.Out), once per
	// writer instance; nil: none, each Reply answers on its own.
	NewBatch func() Batch
	// Inbox, when set, is where senders Push their Appends (NewInbox); the
	// writer binds it to its stage.
	Inbox         *Inbox
	Mode          FlushMode
	FlushInterval time.Duration // async mode fsync period (default 500 ms)
	// Appended is called after each drain that appended something, once
	// its answers are out (wake the dispatcher).
	Appended func()
	// Written, when set, is called in sync flush mode after a drain's
	// writes and before its group-commit fsync, on the writer's goroutine
	// (replication: the senders stream the batch to the replicas while
	// the fsync runs, instead of after it; Appended still follows the
	// fsync, so the confirmed offset moves with the flushed one).
	Written func()
	// Stored, when set, is called on the writer's goroutine for every
	// Append stored, with its kind, topic (Append.Topic, else its queue's),
	// message type, record count and bytes (statistics).
	Stored func(kind stats.Kind, topic, msgType string, records, bytes int)
	// PutTime, when set, is called on the writer's goroutine after each
	// batch that stored records, with the time from taking the batch to
	// answering it (the fsync of a synchronous flush included) and the
	// records it held (statistics: RocketMQ's put-message time).
	PutTime func(d time.Duration, records int)
	// OnSync, when set, is called after each CommitLog fsync, on the
	// writer's goroutine (sync flush) or the flusher's (async flush)
	// (observability and tests).
	OnSync func()
	// Fault, when set (tests only), is called after each append and before
	// its reply: a panic there restarts the writer, which still answers
	// every append it had stored (Writer.rescue).
	Fault func()
	// Role, when set, makes the writer role-aware (confirm.go): it takes
	// sends only on an unfenced master promoted at the current epoch
	// (Promote), refusing the others with ErrNotMaster or ErrFenced and
	// appending nothing. Nil: standalone, every send taken.
	Role *role.Holder
	// MinInSync refuses sends (ErrInSyncReplicas) while the master's
	// sync-state set has fewer members (0: no minimum).
	MinInSync int
	// Confirmer, when set, holds each stored send's answer until the
	// replicas confirm its batch (ErrNotConfirmed on failure or after
	// ConfirmTimeout, default 3 s).
	Confirmer      Confirmer
	ConfirmTimeout time.Duration
	// OnConfirmed, when set, is called on the writer's goroutine after a
	// confirmation answered sends (the confirmed offset advanced: wake
	// the dispatcher).
	OnConfirmed func()
	Logger      zerolog.Logger
}

// logFailed is sent by the flusher when a periodic fsync failed: the
// CommitLog is in its sticky failed state and the writer restarts to
// reopen it.
type logFailed struct{}
type drainNow struct{}

// Writer is the actor; build it with Producer.
type Writer struct {
	opts Options
	self *stage.Stage
	next map[QueueKey]int64
	// flusher fsyncs every FlushInterval in async flush mode, beside the
	// writer, so that appends go on during an fsync.
	flusher *flusher

	stash       []*Append // appends sent with Stage.Send, waiting for the next drain
	drainQueued bool      // a drainNow is in the mailbox

	// Scratch reused from drain to drain, so that a drain allocates nothing.
	batch   []*Append // what the stash and the inbox hand over
	slots   []slot    // the drain under way: its appends until answered
	records [][]byte
	touched map[QueueKey]int64
	out     Batch // Options.NewBatch's (nil: none); flushed by flushOut
	wrote   bool  // the drain under way appended something (Appended is due)

	// Replication (confirm.go).
	promotion *promotion // the epoch the writer was promoted at (Promote)
	held      []held     // stored sends of the batch under way, to wait for
	waits     []*waiting // batches waiting for their confirmation, oldest first
	waitID    uint64
	ctimer    *stage.Timer // the oldest wait's deadline
}

// Producer returns the actor producer.
func Producer(opts Options) stage.Producer {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 500 * time.Millisecond
	}
	if opts.ConfirmTimeout <= 0 {
		opts.ConfirmTimeout = defaultConfirmTimeout
	}
	promoted := &promotion{}
	return func(self *stage.Stage) actor.Actor {
		if opts.Inbox != nil {
			opts.Inbox.Bind(self)
		}
		w := &Writer{opts: opts, self: self, touched: map[QueueKey]int64{}, ctimer: self.NewTimer(), promotion: promoted}
		if opts.NewBatch != nil {
			w.out = opts.NewBatch()
		}
		return w
	}
}

// flushOut writes out the answers the drain's Replies queued in w.out.
func (w *Writer) flushOut() {
	if w.out != nil {
		w.out.Flush()
	}
}

// Receive implements actor.Actor.
func (w *Writer) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		w.reopenIfFailed()
		if err := w.rebuild(); err != nil {
			panic(fmt.Errorf("commitlog writer: rebuild queue offsets: %w", err))
		}
		if w.opts.Mode == FlushAsync {
			w.flusher = startFlusher(w.opts, func() { w.self.Send(logFailed{}) },
				func(f *flusher, reason any) { w.self.Send(flusherPanicked{from: f, reason: reason}) })
		}
		if w.opts.Inbox != nil {
			w.opts.Inbox.Rekick() // what was queued while a previous instance failed
		}
	case *Append:
		w.stash = append(w.stash, m)
		if !w.drainQueued {
			w.drainQueued = true
			w.self.Send(drainNow{})
		}
	case drainNow:
		w.drainQueued = false
		w.drainAll()
	case *Promote:
		w.promote(m)
	case *confirmed:
		w.onConfirmed(m)
	case confirmTick:
		w.onConfirmTick(m)
	case logFailed:
		w.restartIfFailed()
	case flusherPanicked:
		if m.from == w.flusher { // else from the flusher of an instance before a restart
			panic(fmt.Errorf("commitlog writer: restarting after its flusher panicked: %v", m.reason))
		}
	case *actor.Stopping, *actor.Restarting:
		w.flusher.stop()
		w.drainStash()
		if _, stopping := m.(*actor.Stopping); stopping && w.opts.Inbox != nil {
			w.drainBatch(w.opts.Inbox.Take(w.batch[:0]))
		}
		w.failWaits("the writer stopped before its replicas confirmed")
	}
}

// sync fsyncs the CommitLog (sync flush: for the batch just written).
func (w *Writer) sync() error {
	err := w.opts.Store.CommitLog.Sync()
	w.synced()
	if err != nil {
		w.opts.Logger.Error().Err(err).Msg("commitlog fsync failed")
		return fmt.Errorf("commitlog fsync: %w", err)
	}
	return nil
}

// restartIfFailed fails the writer when the CommitLog is in its sticky
// failed state, so that the supervisor restarts it and the new instance
// reopens the log (reopenIfFailed). Call it only when every append taken
// off the mailbox or the inbox was answered or is stashed: the stash is
// drained (with the log's error) on Restarting and the inbox is taken by the
// next instance, so nothing is left unanswered.
func (w *Writer) restartIfFailed() {
	if err := w.opts.Store.CommitLog.Failed(); err != nil {
		panic(fmt.Errorf("commitlog writer: restarting to reopen the failed commitlog: %w", err))
	}
}

// reopenIfFailed reopens a CommitLog left in its sticky failed state (see
// the package documentation). A reopen that fails, or that cut records
// readers had already seen, is fatal.
func (w *Writer) reopenIfFailed() {
	cl, log := w.opts.Store.CommitLog, w.opts.Logger
	cause := cl.Failed()
	if cause == nil {
		return
	}
	log.Warn().Err(cause).Msg("commitlog is in its failed state; reopening it (tail recovery)")
	info, err := cl.Reopen()
	if err != nil {
		log.Error().Err(err).AnErr("cause", cause).
			Msg("reopening the failed commitlog failed: the writer stops for good and sends are refused until the process is restarted")
		panic(fmt.Errorf("commitlog writer: reopen the failed commitlog: %w: %w", supervisor.ErrFatal, err))
	}
	if info.Lost() {
		log.Error().AnErr("cause", cause).Int64("readable_until", info.PreviousMaxOffset).
			Int64("recovered_until", info.MaxOffset).Str("reason", info.Recovery.Reason).
			Msg("reopened commitlog lost records readers had seen: the writer stops for good; restart the process to realign the consume queues")
		panic(fmt.Errorf("commitlog writer: reopen cut the commitlog back from %d to %d (%s): %w",
			info.PreviousMaxOffset, info.MaxOffset, info.Recovery.Reason, supervisor.ErrFatal))
	}
	log.Warn().AnErr("cause", cause).Int64("max_offset", info.MaxOffset).Int64("truncated_at", info.Recovery.TruncatedAt).
		Msg("commitlog reopened after its failure; taking sends again")
}

func (w *Writer) synced() {
	if w.opts.OnSync != nil {
		w.opts.OnSync()
	}
}

func (w *Writer) queueMax(k QueueKey) int64 {
	if q := w.opts.Store.Queues.Lookup(k.Topic, k.QueueID); q != nil {
		return q.MaxOffset()
	}
	return 0
}

// rebuild computes the next queue offset of every queue: one past the
// highest queue offset the CommitLog holds (storage.Store.QueueEnds: the
// consume queue's end, or one past the last record of that queue not yet
// dispatched). A damaged record is passed over (the dispatcher reports it):
// its queue offset is unknown, and if it was its queue's last one the next
// message takes it, which keeps the queue without a gap.
func (w *Writer) rebuild() error {
	ends, err := w.opts.Store.QueueEnds(w.opts.Store.Dispatched.Load())
	if err != nil {
		return fmt.Errorf("rebuild queue offsets: %w", err)
	}
	w.next = make(map[QueueKey]int64, len(ends))
	for id, end := range ends {
		w.next[QueueKey{Topic: id.Topic, QueueID: id.QueueID}] = end
	}
	return nil
}
