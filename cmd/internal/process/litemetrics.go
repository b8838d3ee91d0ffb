package process

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/actors/broker"
)

// registerLiteMetrics exports the lite topics' memory (docs/lite.md,
// "Memory and files"; docs/operations.md's metric table):
//
//	wheelmq_lite_topics_resident        gauge: lite topics in memory
//	wheelmq_lite_topics_evicted         gauge: lite topics in the spill store
//	wheelmq_lite_evictions_total        counter: lite topics evicted
//	wheelmq_lite_reloads_total          counter: evicted lite topics reloaded
//	wheelmq_lite_acks_journaled_total   counter: lite acks appended to the lite ack journal
func (n *Node) registerLiteMetrics(core *broker.Broker) {
	gauge := func(name, help string, f func(broker.LiteStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(core.LiteStats()) })
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	for _, c := range []prometheus.Collector{
		gauge("wheelmq_lite_topics_resident", "Lite topics in memory (--lite-resident-max bounds those with no subscriber).",
			func(s broker.LiteStats) float64 { return float64(s.Topics) }),
		gauge("wheelmq_lite_topics_evicted", "Lite topics evicted to the spill store (a 64-bit hash each in memory).",
			func(s broker.LiteStats) float64 { return float64(s.Evicted) }),
		counter("wheelmq_lite_evictions_total", "Lite topics evicted from memory to the spill store.",
			func() float64 { return float64(core.LiteStats().Evictions) }),
		counter("wheelmq_lite_reloads_total", "Evicted lite topics reloaded into memory (a send, a subscription, a journaled ack).",
			func() float64 { return float64(core.LiteStats().Reloads) }),
		counter("wheelmq_lite_acks_journaled_total", "Lite acks appended to the CommitLog's lite ack journal (replicated with it).",
			func() float64 { return float64(core.LiteAcksJournaled()) }),
	} {
		if err := n.registry.Register(c); err != nil {
			n.cfg.Logger.Warn().Err(err).Msg("lite metric not registered")
		}
	}
}
