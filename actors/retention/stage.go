package retention

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// StageName is the retention stage's stable name.
const StageName = "retention"

// PinTimerWheel names the pin of pending timers (the one rolling moves).
const PinTimerWheel = "timer_wheel"

// Pin is one provider of "still needed" CommitLog offsets: nothing at or
// after the offset it returns is deleted. It returns math.MaxInt64 when it
// needs nothing. It is called on the retention stage's goroutine once per
// round and must not block.
type Pin struct {
	Name   string
	Offset func() int64
}

// Options configures the retention stage.
type Options struct {
	Store *storage.Store
	// Wheel is the timer store whose far timers are rolled forward (nil:
	// no rolling).
	Wheel *timerwheel.Store
	// MayRoll, when set, is asked before each round's rolling: a replica
	// of a replicated group deletes expired segments but appends nothing
	// (its master's rolls reach it through the stream), so its pending
	// timers hold their segments until it is promoted. Nil: always.
	MayRoll func() bool
	// Policy holds the retention rules.
	Policy Policy
	// FullRatio: at or above this disk use, sends are refused (Disk.Full).
	FullRatio float64
	// Live, when set, returns the policy and full ratio in force instead
	// (run-time settings, read at every disk sample and every round).
	Live func() (Policy, float64)
	// Pins are the providers of offsets still needed.
	Pins []Pin
	// Append hands records to the commitlog writer stage; Trim hands a
	// trim to the dispatch stage.
	Append func(*writer.Append)
	Trim   func(*dispatch.Trim)
	// Disk receives the sampled disk use.
	Disk *Disk
	// DiskUsage samples the used ratio (default StatfsUsage of the data
	// directory).
	DiskUsage func() (float64, error)
	// Now is the clock of the policy: message ages and the schedule
	// (default time.Now).
	Now func() time.Time
	// Interval is how often a round runs (default 10 s); SampleInterval how
	// often the disk is sampled (default 1 s); DeleteInterval the pause
	// between two segment deletions (default 100 ms, RocketMQ's
	// deleteCommitLogFilesInterval).
	Interval, SampleInterval, DeleteInterval time.Duration
	// RollBudget caps the message bytes copied forward per round (default
	// 64 MiB).
	RollBudget int64
	// Fault, when set (tests), is called before each segment deletion.
	Fault   func()
	Metrics *Metrics
	Logger  zerolog.Logger
}

// RunNow starts a round at once (or joins the one running) and calls Reply
// with its report when it ends. Reply is called on the stage's goroutine
// and must not block.
type RunNow struct {
	Reply func(Report)
}

// Fail implements stage.Failable.
func (r *RunNow) Fail(err error) { r.Reply(Report{Err: err}) }

// Report tells what a round did.
type Report struct {
	// Reason is why segments were wanted ("" when none were).
	Reason string
	// Deleted and DeletedBytes count the CommitLog segments deleted.
	Deleted      int
	DeletedBytes int64
	// Rolled and RolledBytes count the timer messages copied forward and
	// rerouted.
	Rolled      int
	RolledBytes int64
	// HeldBy names the pin that kept wanted segments, at HeldAt.
	HeldBy string
	HeldAt int64
	// MinOffset is the CommitLog's minimum afterwards.
	MinOffset int64
	// UsedRatio is the disk use sampled at the start of the round.
	UsedRatio float64
	// Err is set when the round was cut short.
	Err error
}

// stepTimeout is how long a round waits for the writer or the dispatcher
// before it gives up (the next round starts over).
const stepTimeout = 30 * time.Second

type roundTick struct{}
type sampleTick struct{}
type stepMsg struct{ epoch uint64 }

// appendDone is the writer's answer to one roll append.
type appendDone struct {
	epoch uint64
	olds  []int64 // old CommitLog offsets, in record order
	sizes []int32 // sizes of the copies
	res   writer.Result
}

// trimDone is the dispatcher's answer to a Trim.
type trimDone struct {
	epoch uint64
	res   consumequeue.StoreTrim
	err   error
}

// Producer returns the stage's producer. The epoch outlives restarts so
// that answers meant for a previous instance's round are recognised.
func Producer(opts Options) stage.Producer {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	if opts.SampleInterval <= 0 {
		opts.SampleInterval = time.Second
	}
	if opts.DeleteInterval < 0 {
		opts.DeleteInterval = 0
	} else if opts.DeleteInterval == 0 {
		opts.DeleteInterval = 100 * time.Millisecond
	}
	if opts.RollBudget <= 0 {
		opts.RollBudget = 64 << 20
	}
	if opts.Disk == nil {
		opts.Disk = &Disk{}
	}
	if opts.DiskUsage == nil {
		opts.DiskUsage = StatfsUsage(opts.Store.Dir)
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil, opts.Disk)
	}
	epoch := &atomic.Uint64{}
	ages := map[int64]int64{}
	return func(self *stage.Stage) actor.Actor {
		return &Retention{opts: opts, self: self, epoch: epoch, ages: ages,
			tick: self.NewTimer(), sample: self.NewTimer(), pace: self.NewTimer()}
	}
}

// Retention is the actor.
type Retention struct {
	opts    Options
	self    *stage.Stage
	epoch   *atomic.Uint64
	ages    map[int64]int64 // segment base -> NewestMs (segments are immutable once followed)
	tick    *stage.Timer
	sample  *stage.Timer
	pace    *stage.Timer
	r       *round
	waiters []func(Report)
	diskErr bool   // the last disk sample failed (logged once)
	held    string // the pin that held the last round (logged when it changes)
}

// round is the state of the round in progress.
type round struct {
	epoch    uint64
	progress time.Time // last answer received (real time, for stepTimeout)
	report   Report
	// rolling
	rollBelow  int64
	buckets    []timerwheel.PinnedBucket
	bucket     int64
	relocs     map[int64]timerwheel.Relocation
	waiting    int
	spent      int64
	rolled     bool
	rollFailed bool // a copy could not be written: no more rolling this round
	// deleting
	deleting bool
	toDelete []Segment
}

// Receive implements actor.Actor.
func (s *Retention) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		for _, p := range s.opts.Pins {
			s.opts.Metrics.pin(p.Name, p.Offset())
		}
		s.sampleDisk()
		s.sample.Arm(s.opts.SampleInterval, sampleTick{})
		s.tick.Arm(s.opts.Interval, roundTick{})
	case sampleTick:
		s.sampleDisk()
		s.sample.Arm(s.opts.SampleInterval, sampleTick{})
	case roundTick:
		if s.r != nil && time.Since(s.r.progress) > stepTimeout {
			s.finish(errors.New("retention round timed out waiting for the writer or the dispatcher"))
		}
		if s.r == nil {
			s.start()
		}
		s.tick.Arm(s.opts.Interval, roundTick{})
	case *RunNow:
		s.waiters = append(s.waiters, m.Reply)
		if s.r == nil {
			s.start()
		}
	case stepMsg:
		if s.r != nil && m.epoch == s.r.epoch {
			s.step()
		}
	case *appendDone:
		if s.r != nil && m.epoch == s.r.epoch {
			s.appended(m)
		}
	case *trimDone:
		if s.r != nil && m.epoch == s.r.epoch {
			s.trimmed(m)
		}
	case *actor.Stopping, *actor.Restarting:
		s.tick.Stop()
		s.sample.Stop()
		s.pace.Stop()
		if s.r != nil {
			s.finish(errors.New("retention stage stopped"))
		}
	}
}

// sampleDisk samples the disk use into Disk and logs transitions of the
// full state.
func (s *Retention) sampleDisk() {
	ratio, err := s.opts.DiskUsage()
	if err != nil {
		if !s.diskErr {
			s.opts.Logger.Error().Err(err).Msg("disk use cannot be sampled; keeping the last value")
		}
		s.diskErr = true
		return
	}
	s.diskErr = false
	_, fullRatio := s.policy()
	full := ratio >= fullRatio
	if s.opts.Disk.set(ratio, full) {
		if full {
			s.opts.Logger.Error().Float64("used_ratio", ratio).Float64("full_ratio", fullRatio).
				Msg("disk full: refusing sends until disk use drops below the full ratio")
		} else {
			s.opts.Logger.Warn().Float64("used_ratio", ratio).Float64("full_ratio", fullRatio).
				Msg("disk use below the full ratio: accepting sends again")
		}
	}
}

// start begins a round: sample, decide, then roll or delete step by step.
func (s *Retention) start() {
	s.sampleDisk()
	s.r = &round{epoch: s.epoch.Add(1), progress: time.Now()}
	d, pins := s.decide()
	s.r.report.UsedRatio = s.opts.Disk.Ratio()
	s.r.report.Reason = d.Reason
	s.r.report.HeldBy, s.r.report.HeldAt = d.HeldBy, d.HeldAt
	if below := d.RollBelow(PinTimerWheel, pins); below > 0 && s.opts.Wheel != nil && (s.opts.MayRoll == nil || s.opts.MayRoll()) {
		s.r.rollBelow = below
		s.r.buckets = s.opts.Wheel.PinnedFar(below)
	}
	s.r.toDelete = d.Delete
	s.step()
}

// decide evaluates the pins and the policy now.
func (s *Retention) decide() (Decision, []PinValue) {
	pins := make([]PinValue, 0, len(s.opts.Pins))
	for _, p := range s.opts.Pins {
		off := p.Offset()
		pins = append(pins, PinValue{Name: p.Name, Offset: off})
		s.opts.Metrics.pin(p.Name, off)
	}
	in := Input{Now: s.opts.Now(), Segments: s.segments(), UsedRatio: s.opts.Disk.Ratio(), Pins: pins}
	policy, _ := s.policy()
	return policy.Decide(in), pins
}

// policy returns the policy and full ratio in force.
func (s *Retention) policy() (Policy, float64) {
	if s.opts.Live != nil {
		return s.opts.Live()
	}
	return s.opts.Policy, s.opts.FullRatio
}

// segments describes the CommitLog's segments with their age: a segment's
// newest message is stored no later than the first message of the next
// segment, whose store timestamp is read once and cached (a segment is
// immutable once the next one holds a record). When that record cannot be
// read, the file's modification time stands in.
func (s *Retention) segments() []Segment {
	cl := s.opts.Store.CommitLog
	infos := cl.Segments()
	out := make([]Segment, len(infos))
	live := make(map[int64]bool, len(infos))
	for i, info := range infos {
		live[info.Base] = true
		seg := Segment{Base: info.Base, End: info.End}
		if ms, ok := s.ages[info.Base]; ok {
			seg.NewestMs = ms
		} else if i+1 < len(infos) {
			if rec, _, err := cl.Read(info.End); err == nil {
				seg.NewestMs = message.PeekStoreTimestamp(rec)
				s.ages[info.Base] = seg.NewestMs
			} else if mt, err := info.ModTime(); err == nil {
				seg.NewestMs = mt.UnixMilli()
			}
		}
		out[i] = seg
	}
	for base := range s.ages {
		if !live[base] {
			delete(s.ages, base)
		}
	}
	return out
}

// step does the next piece of the round: one bucket to roll, the flush
// after rolling, or one segment to delete.
func (s *Retention) step() {
	r := s.r
	if !r.deleting && r.rollBelow > 0 {
		if len(r.buckets) > 0 && r.spent < s.opts.RollBudget {
			b := r.buckets[0]
			r.buckets = r.buckets[1:]
			s.rollBucket(b.Bucket)
			return
		}
		if err := s.endRoll(); err != nil {
			s.finish(err)
			return
		}
	}
	r.deleting = true
	if len(r.toDelete) == 0 {
		s.finish(nil)
		return
	}
	s.trimNext()
}

// endRoll makes the reroutes durable and decides again: the timer pin has
// moved, so more segments may go now.
func (s *Retention) endRoll() error {
	r := s.r
	r.rollBelow = 0
	if !r.rolled {
		return nil
	}
	if err := s.opts.Wheel.Flush(); err != nil {
		return err
	}
	d, _ := s.decide()
	r.toDelete = d.Delete
	r.report.HeldBy, r.report.HeldAt = d.HeldBy, d.HeldAt
	if r.report.Reason == "" {
		r.report.Reason = d.Reason
	}
	return nil
}

// trimNext asks the dispatcher to trim the consume queues below the next
// segment to delete.
func (s *Retention) trimNext() {
	seg := s.r.toDelete[0]
	if s.heldNow(seg) {
		s.finish(nil) // a pin moved down (a timer stage restarted): stop here
		return
	}
	epoch := s.r.epoch
	s.opts.Trim(&dispatch.Trim{Below: seg.End, Reply: func(res consumequeue.StoreTrim, err error) {
		s.self.Send(&trimDone{epoch: epoch, res: res, err: err})
	}})
}

// trimmed deletes the segment once the consume queues no longer point into
// it, then paces the next deletion.
func (s *Retention) trimmed(m *trimDone) {
	r := s.r
	r.progress = time.Now()
	if m.err != nil {
		s.finish(m.err)
		return
	}
	seg := r.toDelete[0]
	r.toDelete = r.toDelete[1:]
	if s.opts.Fault != nil {
		s.opts.Fault()
	}
	// The pins again, right before the deletion: the trim took a round
	// trip through the dispatcher, and a pin may have moved below the
	// segment meanwhile.
	if s.heldNow(seg) {
		s.finish(nil)
		return
	}
	info, ok, err := s.opts.Store.CommitLog.DeleteOldest(seg.End)
	if ok {
		r.report.Deleted++
		r.report.DeletedBytes += info.Size
		s.opts.Metrics.deleted(r.report.Reason, info.Size)
	}
	if err != nil || !ok {
		s.finish(err)
		return
	}
	if len(r.toDelete) == 0 {
		s.finish(nil)
		return
	}
	epoch := r.epoch
	s.pace.Arm(s.opts.DeleteInterval, stepMsg{epoch: epoch})
}

// heldNow reads every pin now and reports whether the lowest reaches into
// seg: then seg must not be deleted (the round records and logs the pin).
func (s *Retention) heldNow(seg Segment) bool {
	holder := PinValue{Offset: math.MaxInt64}
	for _, p := range s.opts.Pins {
		if off := p.Offset(); off < holder.Offset {
			holder = PinValue{Name: p.Name, Offset: off}
		}
	}
	if seg.End <= holder.Offset {
		return false
	}
	s.r.report.HeldBy, s.r.report.HeldAt = holder.Name, holder.Offset
	s.opts.Logger.Warn().Int64("segment", seg.Base).Int64("segment_end", seg.End).Str("pin", holder.Name).
		Int64("pin_offset", holder.Offset).Msg("segment deletion cancelled: a pin moved below its end since the round decided")
	return true
}

// finish ends the round and answers the waiters.
func (s *Retention) finish(err error) {
	r := s.r
	s.r = nil
	s.pace.Stop()
	r.report.Err = err
	r.report.MinOffset = s.opts.Store.CommitLog.MinOffset()
	ev := s.opts.Logger.Debug()
	switch {
	case err != nil:
		ev = s.opts.Logger.Error().Err(err)
	case r.report.Deleted > 0 || r.report.Rolled > 0:
		ev = s.opts.Logger.Info()
	case r.report.HeldBy != s.held:
		ev = s.opts.Logger.Info()
	}
	s.held = r.report.HeldBy
	ev.Str("reason", r.report.Reason).Int("deleted_segments", r.report.Deleted).
		Int64("deleted_bytes", r.report.DeletedBytes).Int("rolled_timers", r.report.Rolled).
		Int64("rolled_bytes", r.report.RolledBytes).Str("held_by", r.report.HeldBy).Int64("held_at", r.report.HeldAt).
		Int64("min_offset", r.report.MinOffset).Float64("used_ratio", r.report.UsedRatio).Msg("retention round")
	waiters := s.waiters
	s.waiters = nil
	for _, w := range waiters {
		w(r.report)
	}
}
