// Package index is the message-key index stage: it reads the CommitLog
// behind the dispatcher, from the index's durable position, and adds each
// record's UNIQ_KEY and KEYS (space separated) under its stored topic to the
// key index (storage/index), flushing one write per batch and making the
// position durable every CheckpointInterval. It also answers the lookups
// that need the index or the CommitLog by offset: QUERY_MESSAGE (Query) and
// VIEW_MESSAGE_BY_ID (View).
//
// The stage owns its index: it opens it in Started (recovering it, and
// cutting entries above the CommitLog's recovered end) and closes it when
// stopping or restarting, so a supervisor restart resumes from what is
// durable and re-indexes the rest exactly once. It never runs ahead of the
// dispatcher (Options.Limit), only reads, and writes its own files, so it
// does not touch the send path.
package index

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/corruption"
	keyindex "github.com/wheelmq/wheelmq/storage/index"
	"github.com/wheelmq/wheelmq/storage/message"
)

// StageName is the stage's stable name.
const StageName = "index"

// batchLimit bounds the records indexed per message, so that lookups and
// ticks are served between batches.
const batchLimit = 4096

// Options configures the stage.
type Options struct {
	Store *storage.Store
	// Dir is the index directory (default <Store.Dir>/index).
	Dir string
	// Index configures the index files.
	Index keyindex.Options
	// Limit returns the CommitLog offset below which records may be indexed
	// (default: Store.Dispatched, so the stage runs behind the dispatcher).
	Limit func() int64
	// CheckpointInterval is how often the index is fsynced and its position
	// made durable (default 1 s).
	CheckpointInterval time.Duration
	// MinInterval spaces indexing rounds (default 10 ms): new records are
	// indexed in batches, not one wake-up per send, so the stage costs the
	// send path little; a lookup first catches up with what is dispatched,
	// so it never misses a stored message. A backlog over catchUpBytes is
	// indexed at once.
	MinInterval time.Duration
	Logger      zerolog.Logger
}

// Kicker wakes the stage, coalescing wake-ups, and publishes its progress.
// It outlives restarts of the stage.
type Kicker struct {
	stage   atomic.Pointer[stage.Stage]
	pending atomic.Bool
	indexed atomic.Int64
	// clamped is set once the index was cut to the CommitLog's recovered end
	// (only on the first start of the process).
	clamped atomic.Bool
}

// Bind attaches the spawned stage (Producer does it).
func (k *Kicker) Bind(s *stage.Stage) { k.stage.Store(s) }

// Kick asks the stage to index new records; safe from any goroutine.
func (k *Kicker) Kick() {
	s := k.stage.Load()
	if s != nil && k.pending.CompareAndSwap(false, true) {
		s.Send(kickMsg)
	}
}

// Indexed is the CommitLog offset below which every record has been added
// to the index (flushed, maybe not yet durable); -1 before the first start.
func (k *Kicker) Indexed() int64 { return k.indexed.Load() }

type kick struct{}

// kickMsg is kick as Kick sends it (no allocation per kick).
var kickMsg = stage.Prewrapped(kick{})

type syncTick struct{}
type roundTick struct{}

// catchUpBytes is the backlog indexed at once, without waiting for
// MinInterval.
const catchUpBytes = 4 << 20

// Indexer is the actor.
type Indexer struct {
	opts   Options
	kicker *Kicker
	ix     *keyindex.Index
	offset int64
	timer  *stage.Timer
	round  *stage.Timer          // the deferred next round
	last   time.Time             // when the last round ran
	armed  bool                  // a roundTick is pending
	block  commitlog.BlockReader // reused from run to run
}

// Producer returns the actor producer; it binds k to the stage.
func Producer(opts Options, k *Kicker) stage.Producer {
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = time.Second
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = 10 * time.Millisecond
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Join(opts.Store.Dir, "index")
	}
	if opts.Limit == nil {
		st := opts.Store
		opts.Limit = st.Dispatched.Load
	}
	opts.Index.Logger = opts.Logger
	k.indexed.Store(-1)
	return func(self *stage.Stage) actor.Actor {
		k.Bind(self)
		return &Indexer{opts: opts, kicker: k, timer: self.NewTimer(), round: self.NewTimer()}
	}
}

// Receive implements actor.Actor.
func (x *Indexer) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		x.start()
	case kick:
		x.kicker.pending.Store(false)
		wait := x.opts.MinInterval - time.Since(x.last)
		if wait > 0 && x.limit()-x.offset < catchUpBytes {
			if !x.armed {
				x.armed = true
				x.round.Arm(wait, roundTick{})
			}
			return
		}
		x.runRound()
	case roundTick:
		x.armed = false
		x.runRound()
	case syncTick:
		x.sync()
		x.armTick()
		if x.offset < x.limit() {
			x.kicker.Kick() // a safety net: normally the dispatcher's notice kicks
		}
	case *Query:
		x.catchUp()
		m.Reply(x.query(m))
	case *View:
		m.Reply(x.view(m.Offset))
	case *actor.Stopping, *actor.Restarting:
		x.timer.Stop()
		x.round.Stop()
		if x.ix != nil {
			if err := x.ix.Close(); err != nil {
				x.opts.Logger.Error().Err(err).Msg("index close failed")
			}
			x.ix = nil
		}
	}
}

// start opens the index and resumes from its durable position, cut back
// to the CommitLog's end when the CommitLog lost records the index holds.
func (x *Indexer) start() {
	iopts := x.opts.Index
	if iopts.FS == nil {
		iopts.FS = x.opts.Store.FS
	}
	ix, err := keyindex.Open(x.opts.Dir, iopts)
	if err != nil {
		panic(fmt.Errorf("index: open: %w", err))
	}
	x.ix = ix
	cl := x.opts.Store.CommitLog
	pos := ix.Position()
	cut := int64(-1)
	if r := cl.Recovery(); r.TruncatedAt >= 0 && pos > r.TruncatedAt && x.kicker.clamped.CompareAndSwap(false, true) {
		cut = r.TruncatedAt // the CommitLog lost its tail in recovery
	}
	if end := cl.MaxOffset(); pos > end && (cut < 0 || end < cut) {
		cut = end
	}
	if cut >= 0 {
		// The index is ahead of the recovered commitlog: cut it back.
		x.opts.Store.Corrections.Record(x.opts.Logger, storage.Correction{What: storage.FixIndex, From: pos, To: cut,
			CommitLogEnd: cl.MaxOffset()})
		if err := ix.TruncateFrom(cut); err != nil {
			panic(fmt.Errorf("index: cut to %d: %w", cut, err))
		}
		pos = ix.Position()
	}
	x.kicker.clamped.Store(true)
	x.offset = max(pos, cl.MinOffset())
	x.kicker.indexed.Store(x.offset)
	x.opts.Logger.Info().Int64("offset", x.offset).Int64("commitlog_end", cl.MaxOffset()).
		Int("files", ix.Stats().Files).Int64("entries", ix.Stats().Entries).Msg("index resuming")
	x.armTick()
	x.kicker.Kick()
}

// runRound indexes one batch and asks for another when more remain.
func (x *Indexer) runRound() {
	x.last = time.Now()
	if more := x.run(); more {
		x.kicker.Kick()
	}
}

// catchUp indexes everything dispatched so far (a lookup must see every
// stored message, whatever the round spacing).
func (x *Indexer) catchUp() {
	for x.run() {
	}
}

func (x *Indexer) armTick() { x.timer.Arm(x.opts.CheckpointInterval, syncTick{}) }

func (x *Indexer) limit() int64 {
	return min(x.opts.Limit(), x.opts.Store.CommitLog.MaxOffset())
}

// run indexes about batchLimit records below the limit (read in blocks,
// written with one Flush) and reports whether more remain.
func (x *Indexer) run() bool {
	cl := x.opts.Store.CommitLog
	limit := x.limit()
	n := 0
read:
	for n < batchLimit && x.offset < limit {
		recs, offs, next, err := cl.ReadBlockWith(&x.block, x.offset, 0)
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, commitlog.ErrCorrupt) && x.opts.Store.OnCorruption() == corruption.PolicySkip {
			// Damage: the dispatcher reports it; index what follows.
			to, nerr := cl.NextValid(next)
			if nerr != nil {
				panic(fmt.Errorf("index: skip damaged commitlog entry at %d: %w", next, nerr))
			}
			x.opts.Logger.Debug().Err(err).Int64("from", next).Int64("to", to).Msg("index skips a damaged commitlog span")
			x.offset = min(to, limit)
			n++
			continue
		}
		if err != nil {
			panic(fmt.Errorf("index: read commitlog at %d: %w", x.offset, err))
		}
		for i, rec := range recs {
			if offs[i] >= limit {
				x.offset = offs[i]
				break read
			}
			if err := x.add(offs[i], rec); err != nil {
				if !errors.Is(err, message.ErrCorrupt) || x.opts.Store.OnCorruption() != corruption.PolicySkip {
					panic(err)
				}
				x.opts.Logger.Debug().Err(err).Int64("offset", offs[i]).Msg("index skips an undecodable record")
			}
			n++
		}
		x.offset = next
	}
	if err := x.ix.Flush(x.offset); err != nil {
		panic(fmt.Errorf("index: flush: %w", err))
	}
	x.kicker.indexed.Store(x.offset)
	return n >= batchLimit
}

// add indexes one record: UNIQ_KEY and each piece of KEYS, under the stored
// topic; rolled-back transactional records are skipped, as in RocketMQ.
func (x *Indexer) add(off int64, rec []byte) error {
	l, err := message.ParseLayout(rec)
	if err != nil {
		return fmt.Errorf("index: record at %d: %w", off, err)
	}
	if message.TransactionType(l.SysFlag) == message.SysFlagTransactionRollback {
		return nil
	}
	topic, props := l.Topic(rec), l.Properties(rec)
	ts := message.PeekStoreTimestamp(rec)
	// One scan for both (last occurrence wins, as LookupPropertyBytes).
	var uniq, keys []byte
	for rest := props; len(rest) > 0; {
		k, v, next, ok := message.NextProperty(rest)
		rest = next
		if !ok {
			continue
		}
		switch string(k) {
		case message.PropUniqKey:
			uniq = v
		case message.PropKeys:
			keys = v
		}
	}
	if len(uniq) > 0 {
		if err := x.ix.AddHash(keyindex.KeyHash(topic, uniq), off, ts); err != nil {
			return err
		}
	}
	for len(keys) > 0 {
		k := keys
		if i := indexByte(keys, ' '); i >= 0 {
			k, keys = keys[:i], keys[i+1:]
		} else {
			keys = nil
		}
		if len(k) > 0 {
			if err := x.ix.AddHash(keyindex.KeyHash(topic, k), off, ts); err != nil {
				return err
			}
		}
	}
	return nil
}

func indexByte(b []byte, c byte) int {
	for i, v := range b {
		if v == c {
			return i
		}
	}
	return -1
}

// sync makes the flushed entries and position durable, and deletes the
// index files that only point below the CommitLog's minimum (retention
// deleted those records).
func (x *Indexer) sync() {
	if err := x.ix.Sync(); err != nil {
		panic(fmt.Errorf("index: sync: %w", err))
	}
	below := x.opts.Store.CommitLog.MinOffset()
	if n, err := x.ix.RemoveBefore(below); err != nil {
		x.opts.Logger.Error().Err(err).Msg("index: removing files below the commitlog minimum failed")
	} else if n > 0 {
		x.opts.Logger.Info().Int("files", n).Int64("below", below).Msg("index files removed after retention")
	}
}
