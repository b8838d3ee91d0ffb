package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/actors/stats"
)

// registerTrafficMetrics exposes the message counts every other view of
// the broker shows (the console's Overview, wheelctl cluster list's IN and
// OUT TPS, GET_BROKER_RUNTIME_INFO), read at scrape time from the same
// counters:
//
//	wheelmq_messages_in_total                 client sends stored (the console's "Messages in")
//	wheelmq_stored_records_total{kind}        every record stored, by why (stats.Kind)
//	wheelmq_messages_out_total{protocol}      messages consumed, by protocol (pull; pop: remoting POP and gRPC)
func registerTrafficMetrics(reg prometheus.Registerer, p *Pipeline) {
	c := &p.counters
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "wheelmq_messages_in_total",
		Help: "Messages clients sent and the broker stored (timer write-backs, retries, POP and other internal records are not counted: see wheelmq_stored_records_total).",
	}, func() float64 { return float64(c.PutMessages()) }))
	for _, k := range stats.Kinds() {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "wheelmq_stored_records_total",
			Help:        "Records stored in the CommitLog, by kind: client (sends), retry, dlq, timer (write-backs), pop (journal, deadlines), transaction (ends), system.",
			ConstLabels: prometheus.Labels{"kind": k.String()},
		}, func() float64 { n, _ := c.Records(k); return float64(n) }))
	}
	for _, pr := range stats.Protocols() {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "wheelmq_messages_out_total",
			Help:        "Messages handed to consumers, by protocol: pull (remoting PULL_MESSAGE) and pop (remoting POP_MESSAGE and every gRPC consumer).",
			ConstLabels: prometheus.Labels{"protocol": pr.String()},
		}, func() float64 { n, _ := c.Out(pr); return float64(n) }))
	}
}
