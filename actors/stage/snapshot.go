package stage

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/actors/instrument"
)

// Snapshot is one stage's figures as /metrics shows them.
type Snapshot struct {
	Name string
	// Depth is messages sent to the stage and not yet processed
	// (wheelmq_actor_mailbox_depth).
	Depth int64
	// Messages is messages processed (wheelmq_actor_messages_total).
	Messages uint64
	// Restarts is restarts ordered by the supervisor
	// (wheelmq_actor_restarts_total).
	Restarts uint64
	// Up is false once the supervisor stopped the stage for good
	// (wheelmq_stage_up).
	Up bool
	// Seconds is the processing time per message
	// (wheelmq_actor_process_seconds).
	Seconds instrument.HistogramSnapshot
}

// Snapshot reads every stage's figures, by name.
func (r *Registry) Snapshot() []Snapshot {
	r.mu.Lock()
	out := make([]Snapshot, 0, len(r.series))
	for name, se := range r.series {
		sn := Snapshot{Name: name, Up: true, Messages: se.messages.Load(), Restarts: se.restarts.Load()}
		if s := r.stages[name]; s != nil {
			sn.Depth, sn.Up = s.pending.Load(), s.down.Load() == nil
		}
		out = append(out, sn)
	}
	series := make([]*series, len(out))
	for i := range out {
		series[i] = r.series[out[i].Name]
	}
	r.mu.Unlock()
	for i, se := range series {
		out[i].Seconds = se.seconds.Snapshot()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// collector exports a registry's figures:
//
//	wheelmq_actor_mailbox_depth{stage}     messages sent but not yet taken
//	wheelmq_actor_messages_total{stage}    messages processed
//	wheelmq_actor_process_seconds{stage}   time spent per message (histogram)
//	wheelmq_actor_restarts_total{stage}    restarts ordered by the supervisor
//	wheelmq_stage_up{stage}                1 while the stage runs, 0 once it is stopped for good
type collector struct {
	r                                  *Registry
	depth, messages, seconds, restarts *prometheus.Desc
	up                                 *prometheus.Desc
}

func newCollector(r *Registry) *collector {
	stage := []string{"stage"}
	return &collector{r: r,
		depth:    prometheus.NewDesc("wheelmq_actor_mailbox_depth", "Messages sent to the stage and not yet processed.", stage, nil),
		messages: prometheus.NewDesc("wheelmq_actor_messages_total", "Messages processed by the stage.", stage, nil),
		seconds:  prometheus.NewDesc("wheelmq_actor_process_seconds", "Time the stage spent processing one message.", stage, nil),
		restarts: prometheus.NewDesc("wheelmq_actor_restarts_total", "Restarts of the stage ordered by its supervisor.", stage, nil),
		up:       prometheus.NewDesc("wheelmq_stage_up", "1 while the stage runs; 0 once its supervisor stopped it for good.", stage, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.depth, c.messages, c.seconds, c.restarts, c.up} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.r.Snapshot() {
		up := 0.0
		if s.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(s.Depth), s.Name)
		ch <- prometheus.MustNewConstMetric(c.messages, prometheus.CounterValue, float64(s.Messages), s.Name)
		ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(s.Restarts), s.Name)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, s.Name)
		ch <- instrument.ConstHistogram(c.seconds, s.Seconds, s.Name)
	}
}
