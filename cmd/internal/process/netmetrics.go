package process

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/netloop"
)

// netCollector exports the counters of the process's remoting servers,
// read at scrape time from netloop.Server.Stats (atomics the event loops
// bump, so the network path pays nothing for metrics). The server label is
// the server's name, "broker" or "namesrv"; the reason label is one of
// netloop's fixed bad-frame reasons. Every series exists from the start.
//
//	wheelmq_net_connections{server}                  open connections
//	wheelmq_net_connections_accepted_total{server}   connections accepted
//	wheelmq_net_frames_in_total{server}              frames decoded
//	wheelmq_net_frames_out_total{server}             frames written
//	wheelmq_net_bytes_in_total{server}               bytes read as frames
//	wheelmq_net_bytes_out_total{server}              bytes written
//	wheelmq_net_bad_frames_total{server,reason}      connections closed for an invalid frame
//	wheelmq_net_oversize_answered_total{server}      sends over the frame limit answered MESSAGE_ILLEGAL (13), their bytes skipped
//	wheelmq_net_output_buffered_bytes{server}        answers written and not yet taken by the sockets
//	wheelmq_net_slow_closed_total{server}            connections closed because they did not read their answers
//	wheelmq_net_transport_connections_total{server,transport}  connections by what their first bytes spoke: plain or tls
//	wheelmq_net_transport_refused_total{server,transport}      connections closed for speaking what the port does not take
//	wheelmq_net_tls_connections{server}              open TLS connections
//	wheelmq_net_tls_handshake_failures_total{server} TLS handshakes failed or timed out
//	wheelmq_net_tls_input_overruns_total{server}     TLS connections closed for input not decrypted fast enough
//
// For TLS connections the byte counters count what crosses the socket:
// encrypted bytes.
type netCollector struct {
	mu      sync.Mutex
	servers []*netloop.Server // guarded by mu

	conns, accepted, framesIn, framesOut, bytesIn, bytesOut, bad, oversize, buffered, slowClosed, idleClosed *prometheus.Desc

	transport, refused, tlsOpen, handshakeFailures, overruns *prometheus.Desc
}

func newNetCollector() *netCollector {
	server := []string{"server"}
	return &netCollector{
		conns: prometheus.NewDesc("wheelmq_net_connections", "Open remoting connections.", server, nil),
		accepted: prometheus.NewDesc("wheelmq_net_connections_accepted_total",
			"Remoting connections accepted.", server, nil),
		framesIn:  prometheus.NewDesc("wheelmq_net_frames_in_total", "Remoting frames decoded (requests and responses).", server, nil),
		framesOut: prometheus.NewDesc("wheelmq_net_frames_out_total", "Remoting frames written.", server, nil),
		bytesIn:   prometheus.NewDesc("wheelmq_net_bytes_in_total", "Bytes read from remoting connections as frames.", server, nil),
		bytesOut:  prometheus.NewDesc("wheelmq_net_bytes_out_total", "Bytes written to remoting connections.", server, nil),
		bad: prometheus.NewDesc("wheelmq_net_bad_frames_total",
			"Connections closed because of an invalid frame, by reason (too_short, too_large, malformed).",
			[]string{"server", "reason"}, nil),
		oversize: prometheus.NewDesc("wheelmq_net_oversize_answered_total",
			"Sends longer than the frame limit answered MESSAGE_ILLEGAL (13) with the limit, their bytes skipped (the connection stays open).",
			server, nil),
		buffered: prometheus.NewDesc("wheelmq_net_output_buffered_bytes",
			"Bytes of frames written to remoting connections that their sockets have not taken yet (the peers' unread answers).", server, nil),
		slowClosed: prometheus.NewDesc("wheelmq_net_slow_closed_total",
			"Remoting connections closed because they did not read their answers (buffered output past the hard cap, or above the soft cap past the stall timeout).",
			server, nil),
		idleClosed: prometheus.NewDesc("wheelmq_net_idle_closed_total",
			"Remoting connections closed because they sent nothing within the idle timeout of connecting (--idle-conn-timeout).",
			server, nil),
		transport: prometheus.NewDesc("wheelmq_net_transport_connections_total",
			"Remoting connections by the transport their first bytes chose (plain or tls).", []string{"server", "transport"}, nil),
		refused: prometheus.NewDesc("wheelmq_net_transport_refused_total",
			"Remoting connections closed because they spoke a transport their port does not take: plaintext under --tls-mode enforcing, tls under disabled.",
			[]string{"server", "transport"}, nil),
		tlsOpen: prometheus.NewDesc("wheelmq_net_tls_connections", "Open TLS remoting connections.", server, nil),
		handshakeFailures: prometheus.NewDesc("wheelmq_net_tls_handshake_failures_total",
			"TLS handshakes that failed or did not complete within the handshake timeout.", server, nil),
		overruns: prometheus.NewDesc("wheelmq_net_tls_input_overruns_total",
			"TLS connections closed because their input piled up faster than it was decrypted.", server, nil),
	}
}

// add starts exporting a server's counters.
func (c *netCollector) add(s *netloop.Server) {
	c.mu.Lock()
	c.servers = append(c.servers, s)
	c.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *netCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.conns, c.accepted, c.framesIn, c.framesOut, c.bytesIn, c.bytesOut, c.bad, c.oversize,
		c.buffered, c.slowClosed, c.idleClosed, c.transport, c.refused, c.tlsOpen, c.handshakeFailures, c.overruns} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *netCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	servers := append([]*netloop.Server(nil), c.servers...)
	c.mu.Unlock()
	for _, s := range servers {
		st, name := s.Stats(), s.Name()
		ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(st.Conns), name)
		ch <- prometheus.MustNewConstMetric(c.buffered, prometheus.GaugeValue, float64(st.OutputBuffered), name)
		ch <- prometheus.MustNewConstMetric(c.tlsOpen, prometheus.GaugeValue, float64(st.TLSOpen), name)
		ch <- prometheus.MustNewConstMetric(c.transport, prometheus.CounterValue, float64(st.Plaintext), name, "plain")
		ch <- prometheus.MustNewConstMetric(c.transport, prometheus.CounterValue, float64(st.TLS), name, "tls")
		for r := range netloop.NumTransportRefusals {
			ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(st.RefusedBy[r]), name, r.String())
		}
		for _, m := range []struct {
			d *prometheus.Desc
			v int64
		}{{c.accepted, st.Accepted}, {c.framesIn, st.FramesIn}, {c.framesOut, st.FramesOut},
			{c.bytesIn, st.BytesIn}, {c.bytesOut, st.BytesOut}, {c.oversize, st.Oversize}, {c.slowClosed, st.SlowClosed}, {c.idleClosed, st.IdleClosed},
			{c.handshakeFailures, st.HandshakeFailures}, {c.overruns, st.TLSInputOverruns}} {
			ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, float64(m.v), name)
		}
		for r := range netloop.NumBadFrameReasons {
			ch <- prometheus.MustNewConstMetric(c.bad, prometheus.CounterValue, float64(st.BadFramesBy[r]), name, r.String())
		}
	}
}
