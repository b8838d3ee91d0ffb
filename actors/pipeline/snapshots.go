package pipeline

import (
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/timer"
)

// The typed readings behind the store, timer and stage gauges of /metrics
// (metrics.go, actors/timer, actors/stage), for the console and the rates
// sampler: the same numbers, with no Prometheus in between.

// CommitLogBytes is the bytes in the CommitLog, max offset minus min
// offset (wheelmq_store_commitlog_bytes).
func (p *Pipeline) CommitLogBytes() int64 {
	cl := p.store.CommitLog
	return cl.MaxOffset() - cl.MinOffset()
}

// TimerCounts are the timer counters (wheelmq_timer_delivered_total,
// _pop_deadlines_total, _cancelled_total, _lateness_seconds); zero before
// the timer stages start.
func (p *Pipeline) TimerCounts() timer.Counts { return p.timers.Load().Counts() }

// TimersPending is the timers waiting in the wheel (wheelmq_timer_pending).
func (p *Pipeline) TimersPending() int64 { return int64(p.wheel.Stats().Pending) }

// PopInflight is the POP deliveries in flight (wheelmq_pop_inflight).
func (p *Pipeline) PopInflight() int64 {
	if e := p.popEngine.Load(); e != nil {
		return int64(e.Inflight())
	}
	return 0
}

// StageSnapshots are the figures of every stage of the pipeline's stage
// registry (the process's, when it shares it).
func (p *Pipeline) StageSnapshots() []stage.Snapshot { return p.stages.Snapshot() }
