package router

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// routerMetrics are the router's instruments:
//
//	wheelmq_requests_total{code}            requests received, by request code
//	wheelmq_requests_refused_total{code}    refusals, by response code
//	wheelmq_broker_send_backlog             sends handed to the writer and not answered
//	wheelmq_broker_requests_unanswered      requests of every kind read and not yet answered (open connections)
//
// Request codes outside the served table are counted as code "other", so
// a client sending random codes cannot grow the label set.
type routerMetrics struct {
	requests   *prometheus.CounterVec
	byCode     map[int32]prometheus.Counter // served codes, resolved once
	other      prometheus.Counter
	refusals   *prometheus.CounterVec
	refusedMu  sync.Mutex
	refusedFor map[int32]prometheus.Counter // guarded by refusedMu
}

func newRouterMetrics(r *Router) *routerMetrics {
	m := &routerMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wheelmq_requests_total", Help: "Requests received on the broker port, by RocketMQ request code.",
		}, []string{"code"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wheelmq_requests_refused_total", Help: "Requests refused by the broker, by RocketMQ response code.",
		}, []string{"code"}),
		byCode:     map[int32]prometheus.Counter{},
		refusedFor: map[int32]prometheus.Counter{},
	}
	for code := range handlers {
		m.byCode[code] = m.requests.WithLabelValues(strconv.Itoa(int(code)))
	}
	m.other = m.requests.WithLabelValues("other")
	if reg := r.cfg.Registerer; reg != nil {
		reg.MustRegister(m.requests, m.refusals, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_broker_send_backlog", Help: "Sends handed to the commitlog writer and not yet answered.",
		}, func() float64 { return float64(r.backlog.Load()) }), prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_broker_requests_unanswered",
			Help: "Requests of every kind read on the broker port and not yet answered (parked long polls included), over the open connections.",
		}, func() float64 { return float64(r.Unanswered()) }))
	}
	return m
}

// received counts a request (no allocation).
func (m *routerMetrics) received(code int32) {
	if c, ok := m.byCode[code]; ok {
		c.Inc()
		return
	}
	m.other.Inc()
}

// refused counts a refusal; response codes are a small fixed set.
func (m *routerMetrics) refused(code int32) {
	m.refusedMu.Lock()
	c, ok := m.refusedFor[code]
	if !ok {
		c = m.refusals.WithLabelValues(strconv.Itoa(int(code)))
		m.refusedFor[code] = c
	}
	m.refusedMu.Unlock()
	c.Inc()
}
