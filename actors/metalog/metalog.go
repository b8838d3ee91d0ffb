// Package metalog is the metadata-log stage: it makes the state that lives
// outside the message records (consumer offsets, topics, subscription
// groups, their deletes) travel with the CommitLog, so that a replica, or a
// node started on a byte copy of another's CommitLog, has it too.
//
// Journal (master side). Every change is appended through the CommitLog
// writer as a system record of topic metarec.Topic (format: package
// metarec, docs/formats.md): the offsets stage hands over changed offsets
// at most every second and at once on bursts (offsets.Options.Journal ->
// OffsetsChanged); the topics and groups stages call TopicsChanged /
// GroupsChanged after each persisted change and this stage diffs their
// published snapshots against the last journaled one (creates and updates
// become puts, vanished names deletes); the POP engine calls ModesChanged
// after a SET_MESSAGE_REQUEST_MODE and the changed modes become request
// mode puts (modes are never deleted). Only an unfenced master journals
// (role.Holder); the writer replicates and confirms the records like data.
// A full snapshot (every topic, group and offset, as ordinary put and
// offset records) is written when the stage starts as master, on every
// promotion and every SnapshotInterval.
//
// Apply (every node). The stage reads the system topic's consume queue from
// its cursor. Dispatch builds consume queues only up to the confirmed
// offset (Store.DurableEnd), so only confirmed records are applied. Each
// record is applied through the owning stage (topics.Put/Delete,
// groups.Put/Delete, offsets.Apply/DropTopic/DropGroup, pop.ApplyModes), in log order, so
// replaying any suffix again ends in the same state. A node skips the
// records its own running instance wrote (their origin is its instance id):
// its stages already hold those changes, and possibly newer ones.
//
// Retention. The per-node files (topics.json, subscriptionGroup.json,
// consumerOffset.json) stay authoritative on each node: they are its
// checkpoint, and the cursor (checkpoint entry CursorKey) says which
// records they already reflect; it is saved only after the topics and
// groups stages answered every applied change and the offsets stage
// flushed. A node therefore never needs a deleted segment for state it has
// applied. A node that starts from nothing (a new replica, a copied log)
// needs only the records still retained: the periodic full snapshot puts
// every live entry into the newest segments (retention keeps far more than
// SnapshotInterval), and a delete is always later than the put it undoes.
//
// Limits. Records are upserts and deletes, not a replacement of the whole
// table, so a change a demoted master made locally whose record was never
// confirmed (and was truncated away) stays in that node's files until a
// later record for the same entry overwrites it. After a restart a node
// re-applies, in order, the records after its cursor (at most about
// CursorInterval of them): an entry may pass through an older value before
// it reaches the last one logged. A change made while not master (a
// replica takes none from clients) is not journaled.
package metalog

import (
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pop/mode"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/metarec"
)

// StageName is the stage's stable name.
const StageName = "metalog"

// CursorKey is the checkpoint entry holding the next consume-queue offset
// of metarec.Topic to apply.
const CursorKey = "metalog_applied"

// chunkBytes bounds one record's body: a full snapshot is split.
const chunkBytes = 256 << 10

// Options configures the stage.
type Options struct {
	Store *storage.Store
	// Append hands records to the CommitLog writer stage.
	Append func(*writer.Append)
	// Role says whether this node journals (nil: standalone, it does).
	Role *role.Holder
	// Topics and Groups are the stages' published snapshots.
	Topics *topics.View
	Groups *groups.View
	// Modes is the POP engine's table of consumption models (nil: none
	// journaled or applied).
	Modes *mode.Table
	// SendTopics, SendGroups, SendOffsets and SendPop deliver messages to
	// the topics, groups, offsets and POP stages.
	SendTopics, SendGroups, SendOffsets, SendPop func(any)
	// StoreHost stamps the records.
	StoreHost netip.AddrPort
	// SnapshotInterval is how often a master writes a full snapshot
	// (default 10 min).
	SnapshotInterval time.Duration
	// Poll is how often the system topic's queue is looked at without a
	// Kick (default 200 ms); CursorInterval how often the cursor is saved
	// (default 1 s).
	Poll, CursorInterval time.Duration
	// Progress, when set, publishes how far the stage has applied
	// (progress.go).
	Progress *Progress
	// Origin is this instance's id in the records (default random).
	Origin uint64
	Now    func() time.Time
	Logger zerolog.Logger
}

// TopicsChanged tells the stage the topic table changed (wire it into
// topics.Options.Changed).
type TopicsChanged struct{}

// GroupsChanged tells the stage the group table changed (wire it into
// groups.Options.Changed).
type GroupsChanged struct{}

// ModesChanged tells the stage the request modes changed (wire it into
// pop.Options.ModesChanged).
type ModesChanged struct{}

// OffsetsChanged carries changed offsets (wire offsets.Options.Journal to
// send it).
type OffsetsChanged struct{ Offsets []metarec.Offset }

// OffsetsDropped names a group whose offsets were dropped (wire
// offsets.Options.Dropped to send it): a master journals it, so that a
// replica drops them too, and keeps them on a group delete alone.
type OffsetsDropped struct{ Group string }

// Kick tells the stage the system topic's consume queue grew (send it from
// dispatch's Notify for metarec.Topic); the poll finds it anyway.
type Kick struct{}

// appendFailed tells the stage that the writer refused records.
type appendFailed struct{}

// appendRetry is how soon a master writes a full snapshot after the
// writer refused records.
const appendRetry = 200 * time.Millisecond

// SnapshotNow makes a master write a full snapshot (tests, admin).
type SnapshotNow struct{}

type pollTick struct{}
type snapshotTick struct{}
type cursorTick struct{}
type roleChanged struct{ master bool }
type opDone struct{ err error }
type cursorFlushed struct {
	to  int64
	err error
}
type snapshotOffsets struct{ offs []metarec.Offset }

// Log is the actor.
type Log struct {
	opts  Options
	self  *stage.Stage
	poll  *stage.Timer
	snap  *stage.Timer
	ctick *stage.Timer

	topics map[string]meta.TopicConfig             // as last journaled or applied
	groups map[string]meta.SubscriptionGroupConfig // as last journaled or applied
	modes  map[mode.Key]meta.RequestMode           // as last journaled or applied

	next     int64 // next consume-queue offset to apply
	saved    int64 // the cursor persisted
	inflight int   // applied changes the topics/groups stages have not answered
	saving   bool
	master   bool
}

// Producer returns the actor producer. It subscribes to opts.Role.
func Producer(opts Options) stage.Producer {
	if opts.SnapshotInterval <= 0 {
		opts.SnapshotInterval = 10 * time.Minute
	}
	if opts.Poll <= 0 {
		opts.Poll = 200 * time.Millisecond
	}
	if opts.CursorInterval <= 0 {
		opts.CursorInterval = time.Second
	}
	if opts.Origin == 0 {
		opts.Origin = rand.Uint64() | 1
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	subscribed := false
	return func(self *stage.Stage) actor.Actor {
		if !subscribed && opts.Role != nil {
			subscribed = true
			opts.Role.Subscribe(func(old, cur role.State) {
				if old.IsMaster() != cur.IsMaster() {
					self.Send(roleChanged{master: cur.IsMaster()})
				}
			})
		}
		return &Log{opts: opts, self: self, poll: self.NewTimer(), snap: self.NewTimer(), ctick: self.NewTimer()}
	}
}

// Receive implements actor.Actor.
func (l *Log) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		l.start()
	case TopicsChanged:
		l.topicsChanged()
	case GroupsChanged:
		l.groupsChanged()
	case ModesChanged:
		l.modesChanged()
	case *OffsetsChanged:
		l.journalOffsets(m.Offsets)
	case *OffsetsDropped:
		if l.master {
			l.journalChunks(metarec.KindOffsetsDrop, 1, func(r *metarec.Record, _ int) { r.Names = append(r.Names, m.Group) })
		}
	case Kick:
		l.apply()
	case pollTick:
		l.apply()
		l.poll.Arm(l.opts.Poll, pollTick{})
	case snapshotTick, SnapshotNow:
		l.snapshot()
		l.snap.Arm(l.opts.SnapshotInterval, snapshotTick{})
	case snapshotOffsets:
		l.journalChunks(metarec.KindOffsets, len(m.offs), func(r *metarec.Record, i int) {
			r.Offsets = append(r.Offsets, m.offs[i])
		})
	case roleChanged:
		l.master = m.master
		if m.master {
			// Apply what the old master logged first: the POP engine waits
			// for it (Progress), and the snapshot then carries it.
			l.apply()
			l.opts.Logger.Info().Msg("metadata log: master now, writing a full snapshot")
			l.snapshot()
		}
	case appendFailed:
		if l.master {
			// A master whose promotion was under way (the writer refuses
			// until it rebuilt its queue offsets), or a passing write
			// failure: a full snapshot soon carries what was refused.
			l.snap.Arm(appendRetry, snapshotTick{})
		}
	case opDone:
		l.inflight--
		if m.err != nil {
			l.opts.Logger.Error().Err(m.err).Msg("metadata log: applying a change failed")
		}
		l.publish()
	case cursorTick:
		l.saveCursor()
		l.ctick.Arm(l.opts.CursorInterval, cursorTick{})
	case cursorFlushed:
		l.saving = false
		if m.err != nil {
			l.opts.Logger.Error().Err(m.err).Msg("metadata log: cursor not saved")
			return
		}
		l.saved = max(l.saved, m.to)
	case *actor.Stopping, *actor.Restarting:
		l.poll.Stop()
		l.snap.Stop()
		l.ctick.Stop()
	}
}

func (l *Log) start() {
	l.master = l.opts.Role.Get().IsMaster()
	l.topics = maps.Clone(l.opts.Topics.Load().Topics)
	l.groups = maps.Clone(l.opts.Groups.Load().Groups)
	l.modes = l.currentModes()
	if cp, err := l.opts.Store.LoadCheckpoint(); err == nil {
		l.next, _ = cp.Get(CursorKey)
	} else {
		l.opts.Logger.Warn().Err(err).Msg("metadata log: checkpoint unreadable; applying the whole system topic")
	}
	l.saved = l.next
	if l.master {
		l.snapshot()
	}
	l.apply()
	l.poll.Arm(l.opts.Poll, pollTick{})
	l.snap.Arm(l.opts.SnapshotInterval, snapshotTick{})
	l.ctick.Arm(l.opts.CursorInterval, cursorTick{})
}

// topicsChanged journals the difference between the topic table and the
// last journaled one.
func (l *Log) topicsChanged() {
	cur := l.opts.Topics.Load().Topics
	puts, dels := diff(l.topics, cur)
	l.topics = maps.Clone(cur)
	if !l.master {
		return // a replica's changes come from the log
	}
	if len(puts) > 0 {
		l.journalChunks(metarec.KindTopicPut, len(puts), func(r *metarec.Record, i int) { r.Topics = append(r.Topics, cur[puts[i]]) })
	}
	if len(dels) > 0 {
		l.journalChunks(metarec.KindTopicDelete, len(dels), func(r *metarec.Record, i int) { r.Names = append(r.Names, dels[i]) })
	}
}

func (l *Log) groupsChanged() {
	cur := l.opts.Groups.Load().Groups
	puts, dels := diff(l.groups, cur)
	l.groups = maps.Clone(cur)
	if !l.master {
		return
	}
	if len(puts) > 0 {
		l.journalChunks(metarec.KindGroupPut, len(puts), func(r *metarec.Record, i int) { r.Groups = append(r.Groups, cur[puts[i]]) })
	}
	if len(dels) > 0 {
		l.journalChunks(metarec.KindGroupDelete, len(dels), func(r *metarec.Record, i int) { r.Names = append(r.Names, dels[i]) })
	}
}

// diff returns the names put (new or changed) and deleted from old to cur,
// sorted.
func diff[V any](old, cur map[string]V) (puts, dels []string) {
	for k, v := range cur {
		if o, ok := old[k]; !ok || !reflect.DeepEqual(o, v) {
			puts = append(puts, k)
		}
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			dels = append(dels, k)
		}
	}
	slices.Sort(puts)
	slices.Sort(dels)
	return puts, dels
}

func (l *Log) journalOffsets(offs []metarec.Offset) {
	if !l.master || len(offs) == 0 {
		return
	}
	l.journalChunks(metarec.KindOffsets, len(offs), func(r *metarec.Record, i int) { r.Offsets = append(r.Offsets, offs[i]) })
}

// snapshot journals every topic, group and offset (master only).
func (l *Log) snapshot() {
	if !l.master {
		return
	}
	tt := l.opts.Topics.Load().Topics
	gt := l.opts.Groups.Load().Groups
	l.topics, l.groups = maps.Clone(tt), maps.Clone(gt)
	tn, gn := slices.Sorted(maps.Keys(tt)), slices.Sorted(maps.Keys(gt))
	l.journalChunks(metarec.KindTopicPut, len(tn), func(r *metarec.Record, i int) { r.Topics = append(r.Topics, tt[tn[i]]) })
	l.journalChunks(metarec.KindGroupPut, len(gn), func(r *metarec.Record, i int) { r.Groups = append(r.Groups, gt[gn[i]]) })
	l.modes = l.currentModes()
	ms := sortedModes(l.modes)
	l.journalChunks(metarec.KindRequestModePut, len(ms), func(r *metarec.Record, i int) { r.Modes = append(r.Modes, ms[i]) })
	self := l.self
	l.opts.SendOffsets(&offsets.Snapshot{
		Reply:    func(offs []metarec.Offset) { self.Send(snapshotOffsets{offs: offs}) },
		FailFunc: func(err error) { l.opts.Logger.Error().Err(err).Msg("metadata log: offsets snapshot failed") },
	})
}

// journalChunks appends n entries of one kind (add puts entry i into r) as
// records of at most about chunkBytes each.
func (l *Log) journalChunks(kind metarec.Kind, n int, add func(r *metarec.Record, i int)) {
	var recs [][]byte
	r := metarec.Record{Kind: kind, Origin: l.opts.Origin}
	size, count := 0, 0
	flush := func() {
		if count == 0 {
			return
		}
		b, err := metarec.Message(r, l.opts.StoreHost, l.opts.Now().UnixMilli())
		if err != nil {
			l.opts.Logger.Error().Err(err).Stringer("kind", kind).Msg("metadata log: record not encoded")
		} else {
			recs = append(recs, b)
		}
		r = metarec.Record{Kind: kind, Origin: l.opts.Origin}
		size, count = 0, 0
	}
	for i := range n {
		add(&r, i)
		count++
		size += entrySize(r)
		if size >= chunkBytes {
			flush()
		}
	}
	flush()
	if len(recs) == 0 {
		return
	}
	log, self := l.opts.Logger, l.self
	l.opts.Append(&writer.Append{Key: writer.QueueKey{Topic: metarec.Topic}, Records: recs, Kind: stats.KindSystem, Reply: func(res writer.Result) {
		if res.Err != nil {
			// The change stays in the local files; a full snapshot
			// carries it (appendFailed: soon, while master).
			log.Warn().Err(res.Err).Stringer("kind", kind).Int("records", len(recs)).
				Msg("metadata log: records not appended; a full snapshot follows")
			self.Send(appendFailed{})
		}
	}})
}

// entrySize estimates the encoded size of r's last entry.
func entrySize(r metarec.Record) int {
	switch {
	case len(r.Offsets) > 0:
		o := r.Offsets[len(r.Offsets)-1]
		return len(o.Topic) + len(o.Group) + 16
	case len(r.Topics) > 0:
		return 256
	case len(r.Groups) > 0:
		return 512
	case len(r.Modes) > 0:
		m := r.Modes[len(r.Modes)-1]
		return len(m.ConsumerGroup) + len(m.Topic) + 8
	case len(r.Names) > 0:
		return len(r.Names[len(r.Names)-1]) + binary.MaxVarintLen16
	}
	return 0
}
