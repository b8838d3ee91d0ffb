package pipeline

import (
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/retention"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/txcheck"
	"github.com/wheelmq/wheelmq/actors/writer"
)

// writerOptions are the CommitLog writer's options.
func (p *Pipeline) writerOptions(log zerolog.Logger) writer.Options {
	cfg := p.cfg
	o := writer.Options{
		Store: p.store, Inbox: p.appends, Mode: cfg.Flush, Appended: p.kicker.Kick, Stored: p.counters.Stored, PutTime: p.counters.PutTime,
		Fault: writerFault(cfg), Logger: log, NewBatch: cfg.WriterBatch,
	}
	p.writerReplication(&o)
	return o
}

// txcheckProducer is the transaction-check stage's producer.
func (p *Pipeline) txcheckProducer() stage.Producer {
	cfg := p.cfg
	return txcheck.Producer(txcheck.Options{Store: p.store, StatePath: p.store.TransactionsPath(), BrokerName: cfg.BrokerName,
		Append:      p.appends.Push,
		ToProducer:  func(m *clients.SendToProducer) { p.Stage(clients.StageName).Send(m) },
		EnsureTopic: func(name string) { p.EnsureGroupTopic(name, nil) },
		Timer: timer.Limits{Enabled: cfg.TimerEnabled, MaxDelay: cfg.MaxTimerDelay,
			MinScheduleInterval: cfg.ScheduleMinInterval},
		Live: p.transactionLive, Tick: cfg.TransactionTick,
		Kicker: &p.txKicker, Watermark: p.txLow, Metrics: p.stageMetrics().tx, Role: cfg.Role,
		Logger: cfg.Logger.With().Str("stage", txcheck.StageName).Logger(),
	})
}

// respawnMetrics are the metrics of the stages a role change spawns
// again: registered once, shared by every instance.
type respawnMetrics struct {
	tx  *txcheck.Metrics
	ret *retention.Metrics
}

func (p *Pipeline) stageMetrics() respawnMetrics {
	p.metricsOnce.Do(func() {
		p.txMetrics = txcheck.NewMetrics(p.cfg.Registerer)
		p.retMetrics = retention.NewMetrics(p.cfg.Registerer, &p.disk)
	})
	return respawnMetrics{tx: p.txMetrics, ret: p.retMetrics}
}
