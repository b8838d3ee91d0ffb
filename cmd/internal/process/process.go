// Package process assembles one wheelmq process: an embedded name server,
// a broker, or both, plus the HTTP endpoint for /metrics, /healthz and
// /debug/pprof with Config.Pprof (bound to loopback by default). cmd/wheelmq runs it; tests
// and wheelctl's benchmarks start it in-process (see processtest).
//
// With an ACL file (Config.ACL, acl.go) the file is loaded first (a bad
// one fails the start) and every port checks every request.
//
// Start order: the name server first (so that an embedded broker registers
// with its real bound address, even when the port was 0), then the broker,
// then the HTTP endpoint. Stop runs in reverse: the broker unregisters,
// stops accepting, answers what is pending and flushes; then the name
// server stops.
package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/access"
	"github.com/wheelmq/wheelmq/actors/aclfile"
	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/cmd/internal/tlsconf"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/ctlwire"
	"github.com/wheelmq/wheelmq/netloop/grpcgw"
	"github.com/wheelmq/wheelmq/netloop/nsrvcodec"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Config selects what the process runs.
type Config struct {
	// Broker configures the broker; RunBroker false runs none.
	Broker    pipeline.Config
	RunBroker bool
	// NamesrvListen is the embedded name server's address ("" = none).
	NamesrvListen string
	// NamesrvDir is the name server's directory: kvConfig.json (the KV
	// configuration) and LOCK (held while the name server runs, so that
	// two name servers never share the file). "" keeps the KV
	// configuration in memory only. cmd/wheelmq uses <data>/namesrv.
	NamesrvDir string
	// Controller runs the replication controller embedded in the name
	// server (zero Listen: none): its raft transport on Controller.Listen,
	// its requests on the name server's port; its Dir is required
	// (cmd/wheelmq uses <data>/controller). RemotingAddr is set here, and
	// Security.TLS / Security.Secret from TLS and ControllerSecretFile
	// (controller.go).
	Controller controller.Config
	// ControllerSecretFile holds the controllers' cluster secret (the same
	// file content on every controller, at least controller.MinSecretLen
	// bytes, surrounding whitespace ignored); "": none.
	ControllerSecretFile string
	// HASecretFile holds the broker group's replication secret (the same
	// content on every broker of the group, at least MinHASecretLen bytes,
	// surrounding whitespace ignored); "": derived from the broker's
	// credentials, if any (hasecret.go).
	HASecretFile string
	// HAInsecure lets a broker in controller mode listen for replicas on a
	// non-loopback address with no replication secret.
	HAInsecure bool
	// OrderMessageEnable puts ORDER_TOPIC_CONFIG values into routes as
	// orderTopicConf (RocketMQ's orderMessageEnable).
	OrderMessageEnable bool
	// ACL turns access control on for every port ("" File: off).
	ACL ACLConfig
	// MetricsListen is the HTTP address for /metrics and /healthz ("" = none).
	MetricsListen string
	// Console serves the web console at "/" there (cmd/internal/console;
	// only with a broker).
	Console bool
	// Pprof also serves /debug/pprof there (off by default: profiles and
	// the command line expose the process's internals).
	Pprof bool
	// ConsoleHosts are the names (name or name:port) the console is
	// reached by besides its address and localhost (http.go).
	ConsoleHosts []string
	// ConsoleInsecure lets the console listen on a non-loopback address
	// without TLS and without ACL (refused at start otherwise).
	ConsoleInsecure bool
	// ConsoleRatesEvery is the console's rates sampling period (0: 10 s;
	// an hour of readings is kept, console_rates.go).
	ConsoleRatesEvery time.Duration
	// TLS configures TLS on every remoting port and on the broker's
	// connections to name servers (the zero value: plaintext only).
	TLS TLSConfig
	// GRPC configures the RocketMQ 5 gRPC endpoint (grpc.go; zero: none).
	GRPC GRPCConfig
	// Logger is the process logger.
	Logger zerolog.Logger
}

// Node is a running process.
type Node struct {
	cfg      Config
	registry *prometheus.Registry
	nsSystem *actor.ActorSystem
	stages   *stage.Registry // every stage of the process: metrics and health
	net      *netCollector   // the remoting servers' counters
	nsStage  *stage.Stage
	nsServer *netloop.Server
	ctl      *controller.Controller // the embedded controller (nil: none)
	nsAddr   atomic.Pointer[string] // the name server's bound address, once listening
	nsLock   io.Closer              // the name server directory's LOCK (nil: none)
	tls      *tlsconf.Reloader      // the ports' TLS material (nil: TLS disabled)
	broker   *Broker
	// The ACL (acl.go): the file's view and stage, the ports' Guard (nil:
	// no ACL) and the embedded broker's internal credential.
	aclView   aclfile.View
	aclSystem *actor.ActorSystem
	aclStage  *stage.Stage
	guard     *auth.Guard
	internal  auth.Credentials
	internDir auth.Directory
	// brokerUsers are the broker's ACL 2.0 users, known to the embedded
	// name server's port too once the broker runs.
	brokerUsers lateUsers
	console     *consoleBackend // the web console's backend (nil: no console)
	grpc        *grpcgw.Gateway // the gRPC endpoint (nil: none)
	grpcRoutes  *nsRoutes       // its routes' name-server lookup (nil: none)
	http        *http.Server
	httpSniff   *sniffer // splits the HTTP port between HTTPS and HTTP (permissive; nil: one of them)
	httpAddr    string
	stopOnce    sync.Once
	stopErr     error
}

// Start starts everything the configuration asks for.
func Start(cfg Config) (*Node, error) {
	if err := consoleExposure(cfg); err != nil {
		return nil, err
	}
	haSec, haMode, err := haSecret(cfg) // hasecret.go: refused before anything starts
	if err != nil {
		return nil, err
	}
	switch haMode {
	case haSecretInsecure:
		cfg.Logger.Warn().Str("ha_listen", cfg.Broker.HAListen).
			Msg("replication: the HA port is unauthenticated (--ha-insecure): anyone reaching it can read the CommitLog, and a fake master can feed the replicas")
	case haSecretLoopback:
		cfg.Logger.Warn().Str("ha_listen", cfg.Broker.HAListen).
			Msg("replication: no replication secret (loopback only): any local process can read the CommitLog from the HA port; give --ha-secret-file")
	}
	n := &Node{cfg: cfg, registry: prometheus.NewRegistry()}
	n.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	n.stages = stage.NewRegistry(n.registry)
	n.net = newNetCollector()
	n.registry.MustRegister(n.net)
	if err := n.startTLS(); err != nil {
		return nil, err
	}
	if cfg.ACL.File != "" {
		if err := n.startACL(); err != nil {
			n.stopTLS()
			return nil, err
		}
		if cfg.RunBroker && cfg.NamesrvListen != "" && len(cfg.Broker.NameServers) == 0 {
			c, dir, err := newInternalCredential()
			if err != nil {
				n.stopACL()
				n.stopTLS()
				return nil, err
			}
			n.internal, n.internDir = c, dir
		}
	}
	if cfg.NamesrvListen != "" {
		if err := n.startNamesrv(); err != nil {
			n.stopACL()
			n.stopTLS()
			return nil, err
		}
	}
	if cfg.RunBroker {
		bc := cfg.Broker
		bc.HASecret = haSec // before the internal credential below replaces the operator's
		if len(bc.NameServers) == 0 && n.nsServer != nil {
			bc.NameServers = []string{dialable(n.nsServer.Addr())}
			if n.guard != nil {
				bc.RegisterCredentials = access.Credentials(n.internal)
			}
		}
		bc.Registerer = n.registry
		bc.Stages = n.stages
		bc.NamesrvTLS = n.namesrvClientTLS()
		if n.cfg.TLS.Mode == netloop.TLSEnforcing && n.tls != nil {
			// An enforcing process speaks TLS on its replication stream too.
			bc.HAServerTLS, bc.HADialTLS = n.tls.ServerConfig(), n.tls.ClientConfig()
			bc.HAVerifyMaster = haVerifyMaster(n.tls, n.cfg.TLS) // hasecret.go
		}
		b, err := startBroker(bc, n.portTLS(), n.guard)
		if err != nil {
			n.stopNamesrv(context.Background())
			n.stopACL()
			n.stopTLS()
			return nil, err
		}
		n.broker = b
		b.core.ServeCluster(clusterLookup{n}) // clusterlookup.go
		n.registerLiteMetrics(b.core)         // litemetrics.go
		n.brokerUsers.set(b.pipe.ACL())
		n.net.add(b.server)
		if err := n.startGRPC(); err != nil {
			_ = n.Stop(context.Background())
			return nil, err
		}
	}
	if cfg.MetricsListen != "" {
		if err := n.startHTTP(); err != nil {
			_ = n.Stop(context.Background())
			return nil, err
		}
		if n.broker != nil {
			n.SetConsoleRole(n.broker.pipe.Role()) // nil: standalone
		}
	}
	return n, nil
}

func (n *Node) startNamesrv() error {
	log := n.cfg.Logger.With().Str("component", "namesrv").Logger()
	opts := namesrv.Options{Logger: log, OrderMessageEnable: n.cfg.OrderMessageEnable}
	if dir := n.cfg.NamesrvDir; dir != "" {
		lock, path, err := openNamesrvDir(dir)
		if err != nil {
			return err
		}
		n.nsLock, opts.KVConfigPath = lock, path
	}
	opts.Settings = func() map[string]string { return namesrvSettings(n.NamesrvAddr(), opts) }
	n.nsSystem = stage.NewSystem(log)
	if err := n.startController(&opts); err != nil { // controller.go
		n.nsSystem.Shutdown()
		n.releaseNamesrvDir()
		return err
	}
	strategy := supervisor.New(supervisor.Policy{Logger: log, OnRestart: n.stages.Restarted, Retire: n.stages.Retire})
	st, err := n.stages.Spawn(n.nsSystem, strategy, "namesrv", namesrv.Producer(opts))
	if err != nil {
		n.nsSystem.Shutdown()
		n.stopController(context.Background())
		n.releaseNamesrvDir()
		return fmt.Errorf("start name server: %w", err)
	}
	n.nsStage = st
	h := &namesrvHandler{st: st, log: log, ctl: n.ctl}
	if n.guard != nil {
		extra := []auth.Source{&n.brokerUsers}
		if n.internDir != nil {
			extra = append(extra, auth.Fixed{Dir: n.internDir})
		}
		h.guard = n.guard.ForPort("namesrv", auth.Join(extra...))
	}
	n.nsServer = netloop.NewServer(netloop.Config{Name: "namesrv", Addr: n.cfg.NamesrvListen, Logger: log, TLS: n.portTLS(),
		IdleTimeout: n.cfg.Broker.IdleConnTimeout}, h)
	if err := n.nsServer.Start(); err != nil {
		n.nsStage.Stop()
		n.nsSystem.Shutdown()
		n.stopController(context.Background())
		n.releaseNamesrvDir()
		return fmt.Errorf("name server listen %s: %w", n.cfg.NamesrvListen, err)
	}
	addr := dialable(n.nsServer.Addr())
	n.nsAddr.Store(&addr)
	n.net.add(n.nsServer)
	log.Info().Str("listen", n.nsServer.Addr()).Msg("name server started")
	return nil
}

// openNamesrvDir creates the name server's directory, locks it and reads
// its kvConfig.json once, so that a damaged file stops the start-up with
// the file's name (the stage reads it again on every start).
func openNamesrvDir(dir string) (lock io.Closer, path string, err error) {
	if err := vfs.MkdirAllSynced(nil, dir, 0o755); err != nil {
		return nil, "", fmt.Errorf("name server directory: %w", err)
	}
	lock, err = vfs.OS{}.Lock(filepath.Join(dir, "LOCK"))
	if errors.Is(err, vfs.ErrLocked) {
		return nil, "", fmt.Errorf("name server directory %s is in use by another name server: %w", dir, err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("name server directory: %w", err)
	}
	path = filepath.Join(dir, namesrv.KVConfigFile)
	if _, err := namesrv.LoadKVConfig(nil, path); err != nil {
		_ = lock.Close()
		return nil, "", fmt.Errorf("start name server: %w", err)
	}
	return lock, path, nil
}

// releaseNamesrvDir unlocks the name server's directory (once the stage
// that writes there stopped).
func (n *Node) releaseNamesrvDir() {
	if n.nsLock == nil {
		return
	}
	if err := n.nsLock.Close(); err != nil {
		n.cfg.Logger.Warn().Err(err).Str("dir", n.cfg.NamesrvDir).Msg("unlock name server directory")
	}
	n.nsLock = nil
}

// namesrvHandler forwards name-server requests to the registry stage,
// once the ACL (guard, nil: none) let them through.
type namesrvHandler struct {
	st    *stage.Stage
	log   zerolog.Logger
	guard *auth.Guard
	ctl   *controller.Controller // the embedded controller (nil: none)
}

// brokerConn marks (as the Conn's context) a connection a broker
// registered over: its close removes that broker from the routes.
type brokerConn struct{}

func (h *namesrvHandler) OnOpen(*netloop.Conn) {}

// OnClose tells the registry that a connection brokers registered over is
// gone (RocketMQ's BrokerHousekeepingService): it comes after every
// request of that connection in the stage's mailbox.
func (h *namesrvHandler) OnClose(c *netloop.Conn, _ error) {
	if h.ctl != nil {
		h.ctl.ConnClosed(c.ID()) // brokers heartbeating over it die at once
	}
	if _, ok := c.Context().(brokerConn); ok {
		h.st.Send(namesrv.ConnClosed{Conn: c.ID()})
	}
}

func (h *namesrvHandler) OnCommand(c *netloop.Conn, cmd *remoting.Command) {
	if cmd.IsResponse() {
		return
	}
	isCtl := h.ctl != nil && ctlwire.Handles(cmd.Code)
	if h.guard != nil {
		perms := nsrvcodec.Permissions
		if isCtl {
			perms = ctlwire.Permissions
		}
		if ref := h.guard.Check(c.RemoteAddrPort(), cmd, perms.NeedsOf(cmd)); ref != nil {
			if !cmd.IsOneway() {
				if err := c.Send(remoting.NewResponse(cmd, remoting.NoPermission, ref.Remark)); err != nil {
					h.log.Debug().Err(err).Str("remote", c.RemoteAddr()).Msg("name server response not delivered")
				}
			}
			return
		}
	}
	if isCtl {
		// Answered from the controller's stage, never this event loop.
		ctlwire.Serve(h.ctl, cmd, c.ID(), func(resp *remoting.Command) {
			if err := c.Send(resp); err != nil {
				h.log.Debug().Err(err).Str("remote", c.RemoteAddr()).Msg("controller response not delivered")
			}
		})
		return
	}
	if cmd.Code == remoting.RegisterBroker && c.Context() == nil {
		c.SetContext(brokerConn{})
	}
	nsrvcodec.Serve(h.st, cmd, c.ID(), &h.log, func(resp *remoting.Command) {
		if err := c.Send(resp); err != nil {
			h.log.Debug().Err(err).Str("remote", c.RemoteAddr()).Msg("name server response not delivered")
		}
	})
}

// healthz answers 200 "ok" while every stage runs, else 503 with one line
// per stage stopped for good (its name, since when and the cause).
func (n *Node) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	down := n.stages.Down()
	if len(down) == 0 {
		_, _ = w.Write([]byte("ok\n"))
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
		for _, d := range down {
			_, _ = fmt.Fprintf(w, "down: %v\n", d)
		}
	}
	n.writeRole(w)
	n.writeControllerSecurity(w)
	n.writeCorrections(w)
}

// NamesrvAddr is the embedded name server's bound address ("" if none).
func (n *Node) NamesrvAddr() string {
	if n.nsServer == nil {
		return ""
	}
	return dialable(n.nsServer.Addr())
}

// BrokerAddr is the broker's advertised address ("" if none).
func (n *Node) BrokerAddr() string {
	if n.broker == nil {
		return ""
	}
	return n.broker.Advertise()
}

// Broker is the running broker (nil if none).
func (n *Node) Broker() *Broker { return n.broker }

// MetricsAddr is the HTTP endpoint's bound address ("" if none).
func (n *Node) MetricsAddr() string { return n.httpAddr }

// Registry is the process's metrics registry.
func (n *Node) Registry() *prometheus.Registry { return n.registry }

// Stop stops everything in reverse start order; later calls return the
// first call's result.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() { n.stopErr = n.stop(ctx) })
	return n.stopErr
}

func (n *Node) stop(ctx context.Context) error {
	var errs []error
	if n.http != nil {
		errs = append(errs, n.http.Shutdown(ctx))
		if n.httpSniff != nil {
			errs = append(errs, n.httpSniff.wait(ctx))
		}
	}
	errs = append(errs, n.stopGRPC(ctx))
	n.console.stopRates() // it reads the broker's counters
	if n.broker != nil {
		errs = append(errs, n.broker.Stop(ctx))
	}
	n.stopNamesrv(ctx)
	n.stopACL()
	n.stopTLS()
	return errors.Join(errs...)
}

func (n *Node) stopNamesrv(ctx context.Context) {
	// The controller first: the connections the server then closes must
	// not look like dead brokers to it.
	n.stopController(ctx)
	if n.nsServer != nil {
		if err := n.nsServer.Stop(ctx); err != nil {
			n.cfg.Logger.Warn().Err(err).Msg("stop name server")
		}
	}
	if n.nsStage != nil {
		n.nsStage.Stop()
	}
	if n.nsSystem != nil {
		n.nsSystem.Shutdown()
	}
	n.releaseNamesrvDir()
}

// dialable turns a wildcard listen address into a loopback one.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// namesrvSettings are the name server's settings as GET_NAMESRV_CONFIG
// shows them, by RocketMQ's NamesrvConfig / NettyServerConfig keys.
func namesrvSettings(listen string, o namesrv.Options) map[string]string {
	m := map[string]string{
		"orderMessageEnable":          strconv.FormatBool(o.OrderMessageEnable),
		"scanNotActiveBrokerInterval": strconv.FormatInt(namesrv.DefaultScanInterval.Milliseconds(), 10),
		"kvConfigPath":                o.KVConfigPath,
	}
	if _, port, err := net.SplitHostPort(listen); err == nil {
		m["listenPort"] = port
	}
	return m
}
