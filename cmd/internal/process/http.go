package process

// The HTTP endpoint: /metrics, /healthz, /debug/pprof (--pprof) and the
// web console at "/". It speaks HTTPS, with the process's certificate,
// whenever TLS is configured (any --tls-mode but disabled), so that the
// console's login form never carries a secret in clear on a port whose
// remoting side is protected. A console on a non-loopback address with
// neither TLS nor ACL is refused at start unless ConsoleInsecure says it
// is meant.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/netloop"
)

// ErrConsoleExposed is a console that would serve anyone on the network
// as admin, in clear.
var ErrConsoleExposed = errors.New("the web console would be open to the network: no TLS, no ACL")

// consoleExposure refuses a console on a non-loopback address without
// TLS and without ACL, unless cfg.ConsoleInsecure.
func consoleExposure(cfg Config) error {
	if !cfg.Console || !cfg.RunBroker || cfg.MetricsListen == "" || cfg.ConsoleInsecure || loopbackOnly(cfg.MetricsListen) {
		return nil
	}
	if cfg.TLS.Mode != netloop.TLSDisabled || cfg.ACL.File != "" {
		return nil
	}
	return fmt.Errorf("start: %w: --metrics-listen %s is not a loopback address; turn on TLS (--tls-mode) or an ACL (--acl-file), "+
		"listen on 127.0.0.1, turn the console off (--console=false), or accept it with --console-insecure", ErrConsoleExposed, cfg.MetricsListen)
}

func (n *Node) startHTTP() error {
	ln, err := net.Listen("tcp", n.cfg.MetricsListen)
	if err != nil {
		return fmt.Errorf("metrics listen %s: %w", n.cfg.MetricsListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(n.registry, promhttp.HandlerOpts{Registry: n.registry}))
	if n.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/healthz", n.healthz)
	secure := n.tls != nil
	if n.cfg.Console && n.cfg.RunBroker {
		n.console = &consoleBackend{n: n}
		con, err := console.New(console.Options{Backend: n.console, Logger: n.cfg.Logger,
			Listen: ln.Addr().String(), Hosts: n.cfg.ConsoleHosts, Secure: secure})
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("console: %w", err)
		}
		mux.Handle("/", con)
	}
	// ReadHeaderTimeout also bounds the TLS handshake (net/http sets it
	// as the deadline before the handshake).
	n.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: log.New(n.cfg.Logger.With().Str("component", "http").Logger(), "", 0)}
	n.httpAddr = ln.Addr().String()
	if secure {
		ln = tls.NewListener(ln, n.tls.ServerConfig()) // HTTP/1.1 (no ALPN)
	}
	go func() {
		if err := n.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.cfg.Logger.Error().Err(err).Msg("metrics endpoint stopped")
		}
	}()
	n.cfg.Logger.Info().Str("listen", n.httpAddr).Bool("https", secure).Msg("metrics endpoint started")
	return nil
}
