package grpcgw

import (
	"context"
	"path"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

// metrics are the gateway's Prometheus series (wheelmq_grpc_*).
type metrics struct {
	conns    prometheus.Gauge
	accepted prometheus.Counter
	denied   *prometheus.CounterVec
	streams  *prometheus.GaugeVec
	rpcs     *prometheus.CounterVec
	sessions prometheus.Gauge
	checks   prometheus.Counter
	// forwarded counts a replica's calls passed to its master (forward.go)
	// by method and gRPC code; forwardRefused the forwarded calls refused
	// for a bad x-wheelmq-forwarded-for (forwardfor.go).
	forwarded      *prometheus.CounterVec
	forwardRefused prometheus.Counter
	// released counts deliveries handed back because they never reached
	// their client (release.go).
	released prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		conns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wheelmq_grpc_connections",
			Help: "Open connections on the gRPC port."}),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{Name: "wheelmq_grpc_connections_accepted_total",
			Help: "Connections accepted on the gRPC port."}),
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wheelmq_grpc_connections_refused_total",
			Help: "Connections closed because the TLS mode does not accept their transport."}, []string{"transport"}),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "wheelmq_grpc_streams",
			Help: "Open gRPC streams by method (Telemetry, ReceiveMessage)."}, []string{"method"}),
		rpcs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wheelmq_grpc_rpcs_total",
			Help: "gRPC calls by method and code: the in-band apache.rocketmq.v2.Code name, or the gRPC code name when the call failed at the gRPC level."},
			[]string{"method", "code"}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wheelmq_grpc_sessions",
			Help: "gRPC client sessions (one internal remoting connection each)."}),
		checks: prometheus.NewCounter(prometheus.CounterOpts{Name: "wheelmq_grpc_transaction_checks_total",
			Help: "CHECK_TRANSACTION_STATE requests relayed to a client's Telemetry stream."}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wheelmq_grpc_forwarded_total",
			Help: "Calls a replica's endpoint passed to its group's master, by method and gRPC code (Unavailable: no master reachable within the call's deadline)."},
			[]string{"method", "code"}),
		released: prometheus.NewCounter(prometheus.CounterOpts{Name: "wheelmq_grpc_receive_released_total",
			Help: "Messages a receive popped that never reached the client (its stream write failed, or it left before the answer), offered again 1 s later."}),
		forwardRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "wheelmq_grpc_forwarded_refused_total",
			Help: "Calls refused PERMISSION_DENIED for an x-wheelmq-forwarded-for header without a good proof of the group's replication secret."}),
	}
}

// register adds the series to reg (nil: none).
func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{m.conns, m.accepted, m.denied, m.streams, m.rpcs, m.sessions, m.checks, m.forwarded, m.forwardRefused, m.released} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// statusCarrier is every response with an in-band status.
type statusCarrier interface{ GetStatus() *v2.Status }

// codeName names an in-band code.
func codeName(c v2.Code) string {
	if n, ok := v2.Code_name[int32(c)]; ok {
		return n
	}
	return strconv.Itoa(int(c))
}

// unary counts unary calls by their in-band code.
func (m *metrics) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	method := path.Base(info.FullMethod)
	switch {
	case err != nil:
		m.rpcs.WithLabelValues(method, status.Code(err).String()).Inc()
	default:
		code := "OK"
		if sc, ok := resp.(statusCarrier); ok && sc.GetStatus() != nil {
			code = codeName(sc.GetStatus().GetCode())
		}
		m.rpcs.WithLabelValues(method, code).Inc()
	}
	return resp, err
}

// stream counts open streams and finished ones by their gRPC code (the
// in-band codes of ReceiveMessage are counted by the handler).
func (m *metrics) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	method := path.Base(info.FullMethod)
	g := m.streams.WithLabelValues(method)
	g.Inc()
	defer g.Dec()
	err := h(srv, ss)
	if err != nil || method != "ReceiveMessage" {
		m.rpcs.WithLabelValues(method, status.Code(err).String()).Inc()
	}
	return err
}
