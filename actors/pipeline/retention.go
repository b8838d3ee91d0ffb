package pipeline

import (
	"math"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/retention"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
)

// retentionPins lists what the CommitLog must keep: retention never deletes
// a segment at or after the lowest of these offsets. Each entry is a name
// (the pin label of wheelmq_retention_pin_offset and of the logs) and a
// func() int64 returning the lowest CommitLog offset it still needs, or
// math.MaxInt64 for none. It is called on the retention stage once per
// round and must not block. A part that needs records kept (unfinished
// transactions, the index position) adds one line here.
func (p *Pipeline) retentionPins() []retention.Pin {
	pins := []retention.Pin{
		// Records not yet in the consume queues, and those a crash would
		// dispatch again (the persisted position).
		{Name: "dispatch", Offset: p.dispatchPin},
		// Messages of pending timers (the timer wheel's minimum).
		{Name: retention.PinTimerWheel, Offset: p.timerWheelPin},
		// Timer messages in the timer consume queue not yet durably in the
		// wheel.
		{Name: "timer_enqueue", Offset: p.timerEnqueuePin},
		// Write-backs a crash would have to recognise again.
		{Name: "timer_replay", Offset: p.timerReplayPin},
		// Half messages of unfinished transactions and the transaction
		// stage's restart scan (0, everything, until it has started).
		{Name: "transaction", Offset: func() int64 { return max(p.TransactionWatermark(), 0) }},
	}
	if p.cfg.Index {
		// Records not yet in the message index.
		pins = append(pins, retention.Pin{Name: "index", Offset: p.indexPin})
	}
	return pins
}

// indexPin is the index stage's position (0 until it has started).
func (p *Pipeline) indexPin() int64 { return max(p.indexKick.Indexed(), 0) }

// dispatchPin is the lower of the dispatch position and the persisted one.
func (p *Pipeline) dispatchPin() int64 {
	off := p.store.Dispatched.Load()
	cp, err := p.store.LoadCheckpoint()
	if err != nil {
		return 0 // unreadable: keep everything this round
	}
	return min(off, cp.Values[dispatch.CheckpointKey])
}

// timerWheelPin is the lowest CommitLog offset a pending timer refers to.
func (p *Pipeline) timerWheelPin() int64 {
	off, ok := p.wheel.MinCommitLogOffset()
	if !ok {
		return math.MaxInt64
	}
	return off
}

// timerEnqueuePin is the CommitLog offset of the first timer message the
// wheel does not durably hold yet.
func (p *Pipeline) timerEnqueuePin() int64 {
	q := p.store.Queues.Lookup(timer.Topic, 0)
	if q == nil {
		return math.MaxInt64
	}
	next := max(p.wheel.Checkpoint().DurableEnqueueQueueOffset+1, q.MinOffset())
	if next >= q.MaxOffset() {
		return math.MaxInt64 // the wheel holds every timer message
	}
	units, err := q.Read(next, 1)
	if err != nil {
		return 0 // keep everything this round
	}
	if len(units) == 0 {
		return math.MaxInt64
	}
	return units[0].Offset
}

// timerReplayPin is the timer dequeue side's replay position.
func (p *Pipeline) timerReplayPin() int64 {
	ts := p.timers.Load()
	if ts == nil {
		return math.MaxInt64
	}
	return ts.ReplayPin()
}

// Disk is the disk use sampled by the retention stage (the router refuses
// sends while it is full).
func (p *Pipeline) Disk() *retention.Disk { return &p.disk }

// mayRoll is retention's MayRoll: in controller mode only an unfenced
// master appends roll copies; every node deletes its own expired segments.
func (p *Pipeline) mayRoll() func() bool {
	if !p.replicated() {
		return nil
	}
	return func() bool { return p.role.Get().IsMaster() }
}

// startRetention spawns the retention stage (on every node: a replica
// deletes its expired segments too, it only does not roll; mayRoll).
func (p *Pipeline) startRetention() error {
	cfg := p.cfg
	usage := cfg.DiskUsage
	if usage == nil {
		usage = retention.StatfsUsage(cfg.DataDir)
	}
	_, err := p.spawnStage(retention.StageName, retention.Producer(retention.Options{
		Store: p.store, Wheel: p.wheel, MayRoll: p.mayRoll(),
		Live:   p.retentionLive, // the policy and full ratio in force (settings.go)
		Pins:   p.retentionPins(),
		Append: func(a *writer.Append) { p.Stage(writer.StageName).Send(a) },
		Trim:   func(t *dispatch.Trim) { p.Stage(dispatch.StageName).Send(t) },
		Disk:   &p.disk, DiskUsage: usage, Now: cfg.Clock,
		Interval: cfg.RetentionInterval, SampleInterval: cfg.DiskSampleInterval,
		DeleteInterval: cfg.RetentionDeleteInterval, Fault: cfg.RetentionFault,
		Metrics: p.stageMetrics().ret,
		Logger:  cfg.Logger.With().Str("stage", retention.StageName).Logger(),
	}))
	return err
}
