package pipeline

// RocketMQ's own metric names, beside wheelmq's, so that the dashboards and
// alerts RocketMQ users run work unchanged against a wheelmq broker:
//
//   - what RocketMQ 5's broker exports with metricsExporterType=PROM
//     (BrokerMetricsConstant, DefaultStoreMetricsConstant): the
//     rocketmq_messages_in_total family with its labels cluster,
//     node_type="broker", node_id (the broker name), topic, message_type,
//     consumer_group, is_retry, is_system, and the timer and storage gauges;
//   - what rocketmq-exporter publishes from the admin requests (the
//     rocketmq_brokeruntime_*, rocketmq_producer_*, rocketmq_consumer_* and
//     rocketmq_group_* families with the exporter's labels), which Grafana
//     dashboard 10477 reads (exporternames.go).
//
// Every value comes from the same counters and tables as wheelmq's own
// series, GET_BROKER_RUNTIME_INFO and the console: one definition per
// number (docs/operations.md, "RocketMQ metric names", lists them).

import (
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// SetAdvertised records the broker's advertised address (the brokerIP
// label of the exporter's series); the process calls it once it listens.
func (p *Pipeline) SetAdvertised(addr string) { p.advertised.Store(&addr) }

func (p *Pipeline) advertisedAddr() string {
	if a := p.advertised.Load(); a != nil {
		return *a
	}
	return p.cfg.Advertise
}

// rmqCollector builds the RocketMQ-named series at scrape time.
type rmqCollector struct {
	p *Pipeline

	// The group series ask the offsets and pull stages (the pull stage
	// reads a record per queue for the store-time latency): they are
	// built at most once per groupsEvery and reused by the scrapes in
	// between (the console gathers the registry on every page refresh).
	mu       sync.Mutex
	groups   []prometheus.Metric // guarded by mu
	groupsAt time.Time           // guarded by mu
}

// groupsEvery is how long the group series are reused.
const groupsEvery = 5 * time.Second

// registerRocketMQMetrics adds the RocketMQ-named series to reg.
func registerRocketMQMetrics(reg prometheus.Registerer, p *Pipeline) {
	reg.MustRegister(&rmqCollector{p: p})
}

// Describe sends nothing: the collector is unchecked (its label sets
// follow the topics and groups).
func (c *rmqCollector) Describe(chan<- *prometheus.Desc) {}

// emitter writes one family's samples.
type emitter struct {
	send  func(prometheus.Metric)
	descs map[string]*prometheus.Desc
}

func (e *emitter) emit(name, help string, vt prometheus.ValueType, v float64, labels []string, values ...string) {
	d := e.descs[name]
	if d == nil {
		d = prometheus.NewDesc(name, help, labels, nil)
		e.descs[name] = d
	}
	if m, err := prometheus.NewConstMetric(d, vt, v, values...); err == nil {
		e.send(m)
	}
}

// Collect implements prometheus.Collector.
func (c *rmqCollector) Collect(ch chan<- prometheus.Metric) {
	e := &emitter{send: func(m prometheus.Metric) { ch <- m }, descs: map[string]*prometheus.Desc{}}
	c.rocketmq5(e)
	c.exporter(e)
}

// isSystem is RocketMQ's TopicValidator.isSystemTopic: the is_system
// label.
func isSystem(topic string) bool { return meta.IsSystemTopic(topic) }

// diskSpace returns the size and the free space of the file system
// holding dir.
func diskSpace(dir string) (total, free uint64, ok bool) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || fs.Blocks == 0 {
		return 0, 0, false
	}
	bs := uint64(fs.Bsize)
	return fs.Blocks * bs, fs.Bavail * bs, true
}

// rocketmq5 writes RocketMQ 5's broker series.
func (c *rmqCollector) rocketmq5(e *emitter) {
	p := c.p
	base := []string{"cluster", "node_type", "node_id"}
	bv := []string{p.cfg.Cluster, "broker", p.cfg.BrokerName}
	inL := append(append([]string{}, base...), "topic", "message_type", "is_system")
	p.counters.EachIn(func(k stats.TopicType, v *stats.Pair) {
		vals := append(append([]string{}, bv...), k.Topic, k.Type, strconv.FormatBool(isSystem(k.Topic)))
		e.emit("rocketmq_messages_in_total", "Messages clients sent (client sends only; RocketMQ 5's name).",
			prometheus.CounterValue, float64(v.Msgs.Load()), inL, vals...)
		e.emit("rocketmq_throughput_in_total", "Bytes clients sent (RocketMQ 5's name).",
			prometheus.CounterValue, float64(v.Bytes.Load()), inL, vals...)
	})
	outL := append(append([]string{}, base...), "topic", "consumer_group", "is_retry", "is_system")
	p.counters.EachServed(func(k stats.GroupTopic, v *stats.Pair) {
		vals := append(append([]string{}, bv...), k.Topic, k.Group, strconv.FormatBool(stats.IsRetryTopic(k.Topic)),
			strconv.FormatBool(isSystem(k.Topic)))
		e.emit("rocketmq_messages_out_total", "Messages consumed by every protocol: pull, POP, gRPC (RocketMQ 5's name).",
			prometheus.CounterValue, float64(v.Msgs.Load()), outL, vals...)
		e.emit("rocketmq_throughput_out_total", "Bytes consumed (RocketMQ 5's name).",
			prometheus.CounterValue, float64(v.Bytes.Load()), outL, vals...)
	})
	// Store and timer gauges carry the storage labels of RocketMQ's
	// DefaultStoreMetricsManager.
	stL := append(append([]string{}, base...), "storage_type", "storage_medium")
	sv := append(append([]string{}, bv...), "local", "disk")
	cl := p.store.CommitLog
	e.emit("rocketmq_storage_flush_behind_bytes", "CommitLog bytes written and not yet flushed.", prometheus.GaugeValue,
		float64(max(cl.MaxOffset()-cl.FlushedOffset(), 0)), stL, sv...)
	e.emit("rocketmq_storage_dispatch_behind_bytes", "CommitLog bytes not yet in the consume queues.", prometheus.GaugeValue,
		float64(max(cl.MaxOffset()-p.store.Dispatched.Load(), 0)), stL, sv...)
	if total, free, ok := diskSpace(p.store.Dir); ok {
		e.emit("rocketmq_storage_size", "Bytes used on the data directory's disk.", prometheus.GaugeValue,
			float64(total-free), stL, sv...)
	}
	t := timerFigures(p, time.Now())
	e.emit("rocketmq_timer_enqueue_lag", "Timer messages stored and not yet in the timer wheel.", prometheus.GaugeValue,
		float64(t.enqueueLag), stL, sv...)
	e.emit("rocketmq_timer_dequeue_lag", "Timers due and not yet written back (loaded for delivery).", prometheus.GaugeValue,
		float64(t.dequeueLag), stL, sv...)
	e.emit("rocketmq_timer_dequeue_latency", "How far (ms) delivery is behind the oldest due timer (0: on time).",
		prometheus.GaugeValue, float64(t.dequeueLatencyMs), stL, sv...)
	e.emit("rocketmq_timing_messages", "Timers pending in the wheel, all topics together (wheelmq does not count them by topic).",
		prometheus.GaugeValue, float64(t.pending), stL, sv...)
	e.emit("rocketmq_timer_enqueue_total", "Timers added to the wheel.", prometheus.CounterValue, float64(t.added), stL, sv...)
	e.emit("rocketmq_timer_dequeue_total", "Timers released by the wheel (delivered or cancelled).", prometheus.CounterValue,
		float64(t.issued), stL, sv...)
}

// timerNumbers are the timer wheel's figures shared by both name sets.
type timerNumbers struct {
	pending, enqueueLag, dequeueLag, dequeueLatencyMs int64
	added, issued                                     uint64
}

// timerFigures reads the wheel as GET_BROKER_RUNTIME_INFO does
// (timerOffsetBehind, timerCongestNum, timerReadBehind).
func timerFigures(p *Pipeline, now time.Time) timerNumbers {
	w := p.wheel
	st := w.Stats()
	n := timerNumbers{pending: st.Pending, dequeueLag: int64(st.Loaded), added: st.Added, issued: st.Issued}
	if next, ok := w.NextDue(); ok && st.Pending > 0 && next < now.UnixMilli() {
		n.dequeueLatencyMs = now.UnixMilli() - next
	}
	if q := p.store.Queues.Lookup(timer.Topic, 0); q != nil {
		n.enqueueLag = max(q.MaxOffset()-(w.Checkpoint().EnqueueQueueOffset+1), 0)
	}
	return n
}

// bootMs is the pipeline's start as text (the exporter's boottime label).
func (p *Pipeline) bootMs() string { return strconv.FormatInt(p.booted.UnixMilli(), 10) }
