package process

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/registrar"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/nscalls"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/router"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/message"
)

// Broker is a running broker: its stages (actors/pipeline), the remoting
// port (netloop) and the request router between them (netloop/router).
type Broker struct {
	cfg       pipeline.Config
	pipe      *pipeline.Pipeline
	core      *broker.Broker // the broker API every front door calls
	router    *router.Router
	server    *netloop.Server
	advertise netip.AddrPort
	ha        *haWiring // controller mode's member and stream (nil: none)
	stopOnce  sync.Once
	stopErr   error
}

// StartBroker opens the pipeline, listens, and once the advertised address
// is known serves requests and starts registering with the name servers.
func StartBroker(cfg pipeline.Config) (*Broker, error) { return startBroker(cfg, netloop.TLS{}, nil) }

// startBroker is StartBroker with the port's TLS and ACL (guard; nil:
// none).
func startBroker(cfg pipeline.Config, tls netloop.TLS, guard *auth.Guard) (*Broker, error) {
	haw := prepareReplication(&cfg)   // ha.go
	cfg.WriterBatch = router.NewBatch // remoting answers of a writer drain: one write per connection
	if cfg.NameServerCalls == nil {
		// The registrar's calls: remoting, signed with the broker's credentials.
		cfg.NameServerCalls = nscalls.New(nscalls.Options{TLS: cfg.NamesrvTLS,
			Credentials: auth.Credentials(cfg.RegisterCredentials),
			Logger:      cfg.Logger.With().Str("stage", registrar.StageName).Logger()})
	}
	pipe, err := pipeline.Open(cfg)
	if err != nil {
		return nil, err
	}
	core := broker.New(pipe)
	if g := guard; g != nil {
		// The ACL 2.0 users (actors/acl) are accounts too, as on the port.
		core.SetAuthorizer(guardAuthorizer{g: g.ForPort("broker", pipe.ACL())})
	}
	b := &Broker{cfg: cfg, pipe: pipe, core: core, router: router.NewGuarded(core, guard), ha: haw}
	b.server = netloop.NewServer(netloop.Config{
		Name: "broker", Addr: cfg.Listen, MaxFrame: cfg.MaxFrame, Logger: cfg.Logger,
		MaxOutput: cfg.MaxConnOutput, StallTimeout: cfg.SlowConnTimeout, IdleTimeout: cfg.IdleConnTimeout, TLS: tls,
		MessageLimit: func() int { return pipe.Settings().MaxMessageSize },
	}, b.router)
	if err := b.server.Start(); err != nil {
		_ = pipe.Close()
		return nil, fmt.Errorf("broker listen %s: %w", cfg.Listen, err)
	}
	adv, err := advertiseFor(cfg.Advertise, b.server.Addr())
	if err != nil {
		_ = b.Stop(context.Background())
		return nil, err
	}
	b.advertise = adv
	pipe.SetAdvertised(adv.String()) // the brokerIP label of the RocketMQ-named metrics
	if err := b.core.OpenLite(); err != nil {
		_ = b.Stop(context.Background())
		return nil, err
	}
	b.core.Serve(adv, message.NewUniqKeyGenerator(adv.Addr(), os.Getpid(), int32(time.Now().UnixNano())))
	if err := pipe.StartRegistrar(namesrv.BrokerInfo{
		Cluster: cfg.Cluster, BrokerName: cfg.BrokerName, BrokerAddr: adv.String(),
		HAServerAddr: adv.String(), BrokerID: 0, HeartbeatTimeout: 120 * time.Second,
	}); err != nil {
		_ = b.Stop(context.Background())
		return nil, err
	}
	if err := haw.startMember(b, cfg); err != nil {
		_ = b.Stop(context.Background())
		return nil, err
	}
	cfg.Logger.Info().Str("listen", b.server.Addr()).Str("advertise", adv.String()).Str("broker", cfg.BrokerName).
		Str("cluster", cfg.Cluster).Str("flush", cfg.Flush.String()).Strs("namesrv", cfg.NameServers).
		Msg("broker started")
	return b, nil
}

// Addr is the bound remoting address.
func (b *Broker) Addr() string { return b.server.Addr() }

// Advertise is the address published in routes.
func (b *Broker) Advertise() string { return b.advertise.String() }

// Store exposes the open store (for tools and tests).
func (b *Broker) Store() *storage.Store { return b.pipe.Store() }

// NetStats are the counters of the broker's remoting port (connections,
// frames, buffered output, slow connections closed).
func (b *Broker) NetStats() netloop.ServerStats { return b.server.Stats() }

// Pipeline exposes the broker's stages (for tools and tests).
func (b *Broker) Pipeline() *pipeline.Pipeline { return b.pipe }

// Stop stops the broker cleanly; later calls return the first call's
// result. In order (docs/operations.md, "Stopping"): the remoting port
// refuses every new request with SYSTEM_BUSY "[SHUTDOWN]..." (a client
// retries it on another broker: nothing of it was stored); the stages that
// make work of their own stop and the registrar unregisters; the other
// stages answer everything they hold (every send the writer took is
// answered with its true result) and the pull stage answers its parked
// pulls; every answer is written out and each connection is half-closed
// (the clients close theirs, so that none loses answers it has not read
// to a reset); then the connections close, the
// remaining stages stop and persist their state, and the stores close,
// each only once the stages using it confirmed they stopped. Every step
// has a deadline within ctx's; a step that runs out of time is logged and
// the stop goes on. A stage that does not stop in time is logged by name,
// its stores are left open and the error (pipeline.ErrStagesStuck) says so.
func (b *Broker) Stop(ctx context.Context) error {
	b.stopOnce.Do(func() { b.stopErr = b.stop(ctx) })
	return b.stopErr
}

// Deadlines of the stop's steps (each also within the caller's).
const (
	refuseTimeout = 2 * time.Second
	flushTimeout  = 5 * time.Second
	hangupTimeout = 2 * time.Second
)

// ShutdownRemark is the remark of the SYSTEM_BUSY answer to requests that
// arrive while the broker stops.
const ShutdownRemark = "[SHUTDOWN]broker is shutting down, try another broker"

func (b *Broker) stop(ctx context.Context) error {
	log := b.cfg.Logger
	began := time.Now()
	incomplete := 0
	// The steps before the stages stop only cost answers when they run
	// out of time (a client that does not read, one that does not close):
	// they are logged; what fails the stop is a stage or the server that
	// did not stop.
	step := func(d time.Duration, f func(context.Context) error) {
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if d > 0 {
			sctx, cancel = context.WithTimeout(ctx, d)
		}
		defer cancel()
		if err := f(sctx); err != nil {
			incomplete++
			log.Warn().Err(err).Msg("broker stop: step incomplete, going on")
		}
	}
	step(refuseTimeout, b.ha.stopMember) // a master's group elects another at once
	step(refuseTimeout, func(ctx context.Context) error {
		return b.server.Refuse(ctx, remoting.SystemBusy, ShutdownRemark)
	})
	step(0, b.pipe.Drain) // bounded by Config.DrainTimeout
	step(flushTimeout, b.server.Flush)
	step(hangupTimeout, b.server.Hangup)
	var errs []error
	if err := b.server.Stop(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stop server: %w", err))
	}
	if err := b.core.CloseLite(); err != nil {
		errs = append(errs, fmt.Errorf("close lite log: %w", err))
	}
	if err := b.pipe.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	ev := log.Info()
	if incomplete+len(errs) > 0 {
		ev = log.Warn()
	}
	ev.Dur("took", time.Since(began)).Int("incomplete_steps", incomplete+len(errs)).Msg("broker stopped")
	return errors.Join(errs...)
}

// advertiseFor returns the address to advertise for a bound listen address.
func advertiseFor(configured, bound string) (netip.AddrPort, error) {
	if configured != "" {
		return netip.ParseAddrPort(configured)
	}
	ap, err := netip.ParseAddrPort(bound)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bound address %q: %w", bound, err)
	}
	if !ap.Addr().IsUnspecified() {
		return ap, nil
	}
	return netip.AddrPortFrom(reachableIP(), ap.Port()), nil
}

// reachableIP picks the first non-loopback IPv4 address of the host, or
// 127.0.0.1 when there is none.
func reachableIP() netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(ipn.IP.To4()); ok && ipn.IP.To4() != nil && !ip.IsLoopback() {
					return ip
				}
			}
		}
	}
	return netip.MustParseAddr("127.0.0.1")
}

// Core is the broker's API (actors/broker), the one every front door calls.
func (b *Broker) Core() *broker.Broker { return b.core }
