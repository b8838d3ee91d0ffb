package process

// The HTTP endpoint: /metrics, /healthz, /debug/pprof (--pprof) and the
// web console at "/". Its transports follow --tls-mode, with the
// process's certificate, as the remoting ports: enforcing serves HTTPS
// only; permissive HTTPS and plain HTTP on the one port (httpsniff.go),
// the console's login then only over HTTPS (a plain request for the login
// page is sent to https://); disabled plain HTTP. A console on a
// non-loopback address that anyone who reaches it could use as admin (no
// ACL, no client certificates) is refused at start unless ConsoleInsecure
// says it is meant.

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
// as admin.
var ErrConsoleExposed = errors.New("the web console would make anyone on the network an admin: no ACL, no client certificates")

// consoleExposure refuses a console on a non-loopback address that
// authenticates no one: without an ACL and without mutual TLS (a client
// CA under enforcing). TLS alone (the default permissive mode, or a
// server certificate only) encrypts but lets anyone in as admin. Unless
// cfg.ConsoleInsecure.
func consoleExposure(cfg Config) error {
	if !cfg.Console || !cfg.RunBroker || cfg.MetricsListen == "" || cfg.ConsoleInsecure || loopbackOnly(cfg.MetricsListen) {
		return nil
	}
	if cfg.ACL.File != "" || (cfg.TLS.Mode == netloop.TLSEnforcing && cfg.TLS.ClientCAFile != "") {
		return nil
	}
	return fmt.Errorf("start: %w: --metrics-listen %s is not a loopback address; turn on an ACL (--acl-file) or mutual TLS "+
		"(--tls-mode enforcing with --tls-client-ca), listen on 127.0.0.1, turn the console off (--console=false), "+
		"or accept it with --console-insecure", ErrConsoleExposed, cfg.MetricsListen)
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
	mux.HandleFunc("POST /healthz/acknowledge", n.acknowledge)
	tlsOn := n.tls != nil
	tlsOnly := tlsOn && n.cfg.TLS.Mode == netloop.TLSEnforcing
	if n.cfg.Console && n.cfg.RunBroker {
		n.console = &consoleBackend{n: n}
		if err := n.console.startRates(); err != nil {
			_ = ln.Close()
			return err
		}
		con, err := console.New(console.Options{Backend: n.console, Logger: n.cfg.Logger,
			Listen: ln.Addr().String(), Hosts: n.cfg.ConsoleHosts, Secure: tlsOnly, HTTPSLogin: tlsOn, Registerer: n.registry})
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
	switch {
	case tlsOnly:
		n.serveHTTP(tls.NewListener(ln, n.tls.ServerConfig())) // HTTP/1.1 (no ALPN)
	case tlsOn:
		n.httpSniff = newSniffer(ln, n.cfg.Logger.With().Str("component", "http").Logger())
		n.serveHTTP(n.httpSniff.plain)
		n.serveHTTP(tls.NewListener(n.httpSniff.tls, n.tls.ServerConfig()))
		go n.httpSniff.run()
	default:
		n.serveHTTP(ln)
	}
	n.cfg.Logger.Info().Str("listen", n.httpAddr).Bool("https", tlsOn).Bool("http", !tlsOnly).Msg("metrics endpoint started")
	if n.console != nil {
		n.cfg.Logger.Info().Str("url", consoleURL(n.httpAddr, tlsOnly)).Msg("web console ready: open it in a browser")
	}
	return nil
}

// consoleURL is the address an operator types to reach the console: the
// listen address, with 127.0.0.1 (or [::1]) for a wildcard host, and https
// when the port speaks TLS only.
func consoleURL(addr string, tlsOnly bool) string {
	scheme := "http"
	if tlsOnly {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return scheme + "://" + addr + "/"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/"
}

// serveHTTP serves ln until n.http shuts down (which closes ln and ends
// the goroutine).
func (n *Node) serveHTTP(ln net.Listener) {
	go func() {
		defer func() {
			if r := recover(); r != nil {
				n.cfg.Logger.Error().Interface("panic", r).Msg("metrics endpoint panicked")
			}
		}()
		if err := n.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.cfg.Logger.Error().Err(err).Msg("metrics endpoint stopped")
		}
	}()
}
