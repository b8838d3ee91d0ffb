package process

// The console's rates over the last hour: a supervised stage of the
// process (actors/rates) reads the broker's counters every
// Config.ConsoleRatesEvery into fixed-size rings; the Overview's charts
// and GET /api/rates read them back as series.

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/rates"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
)

// ratesOwner owns the sampler: its actor system and stage, and the rings
// it fills (nil rings: no broker, no sampler).
type ratesOwner struct {
	rings  *rates.Rings
	system *actor.ActorSystem
	stage  *stage.Stage
}

// startRates starts the sampler of the broker's counters.
func (cb *consoleBackend) startRates() error {
	n := cb.n
	if n.broker == nil {
		return nil
	}
	log := n.cfg.Logger.With().Str("component", rates.StageName).Logger()
	rg := rates.NewRings(rates.DefaultSize, n.cfg.ConsoleRatesEvery)
	sys := stage.NewSystem(log)
	strategy := supervisor.New(supervisor.Policy{Logger: log, OnRestart: n.stages.Restarted, Retire: n.stages.Retire})
	st, err := n.stages.Spawn(sys, strategy, rates.StageName, rates.Producer(rates.Options{Rings: rg, Read: cb.readRates}))
	if err != nil {
		sys.Shutdown()
		return fmt.Errorf("console: start the rates sampler: %w", err)
	}
	cb.rates = ratesOwner{rings: rg, system: sys, stage: st}
	return nil
}

// stopRates stops the sampler (nil-safe: no console).
func (cb *consoleBackend) stopRates() {
	if cb == nil || cb.rates.system == nil {
		return
	}
	cb.rates.stage.Stop()
	cb.rates.system.Shutdown()
}

// readRates reads the counters /metrics exports (typed, no gathering):
// stats.Counters, the timer counters, the wheel, the POP engine, the
// remoting servers and the stages.
func (cb *consoleBackend) readRates() rates.Reading {
	p := cb.n.broker.pipe
	c := p.Counters()
	r := rates.Reading{Sample: rates.Sample{At: time.Now(), MsgsIn: c.PutMessages(), BytesIn: c.PutBytes()}}
	for _, k := range stats.Kinds() {
		if k != stats.KindClient {
			m, _ := c.Records(k)
			r.Internal += m
		}
	}
	var pullBytes, popBytes int64
	r.OutPull, pullBytes = c.Out(stats.ViaPull)
	r.OutPop, popBytes = c.Out(stats.ViaPop)
	r.BytesOut = pullBytes + popBytes
	tc := p.TimerCounts()
	r.TimersFired, r.PopDeadlines = int64(tc.Delivered), int64(tc.PopDeadlines)
	r.TimersPending, r.PopInflight, r.Connections = p.TimersPending(), p.PopInflight(), cb.n.net.connections()
	for _, s := range cb.n.stages.Snapshot() {
		r.Stages = append(r.Stages, rates.StageCount{Name: s.Name, Processed: s.Messages})
	}
	return r
}

// Rates are the sampler's series.
func (cb *consoleBackend) Rates(context.Context) (console.Rates, error) {
	rg := cb.rates.rings
	if rg == nil {
		return console.Rates{}, fmt.Errorf("this process runs no broker")
	}
	series := rg.Series()
	out := console.Rates{Every: rg.Every(), Size: rg.Size(), Series: make([]console.RateSeries, 0, len(series))}
	for _, s := range series {
		cs := console.RateSeries{Name: s.Name, Gauge: s.Gauge, Points: make([]console.RatePoint, len(s.Points))}
		for i, pt := range s.Points {
			cs.Points[i] = console.RatePoint{At: pt.At, V: pt.V}
		}
		out.Series = append(out.Series, cs)
	}
	return out, nil
}
