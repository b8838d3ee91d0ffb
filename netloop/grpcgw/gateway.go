package grpcgw

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/recovery"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// Defaults of Options.
const (
	// DefaultIdleTimeout ends a session with no Telemetry stream and no
	// RPC for this long (the Apache proxy's 120 s).
	DefaultIdleTimeout = 120 * time.Second
	// DefaultHandshakeTimeout bounds a connection's TLS sniff and handshake.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultRequestTimeout bounds one call the gateway makes of its own
	// accord (an auto-renewal of a receipt handle).
	DefaultRequestTimeout = 5 * time.Second
	// recvMargin is what MaxRecvMsgSize allows beyond the largest body
	// (headers, properties, protobuf framing).
	recvMargin = 1 << 20
)

// Options configures a Gateway.
type Options struct {
	// Listen is the gRPC port's address (e.g. 0.0.0.0:8081).
	Listen string
	// MoveAside makes a Listen whose port is taken listen on the same
	// host's port 0 instead (the kernel picks; logged): for a default
	// port, so that several brokers on one machine start as written.
	// Clients find the endpoint through the routes of any other one.
	MoveAside bool
	// Advertise is the host:port put into routes' endpoints ("":
	// AdvertiseHost with the bound port).
	Advertise string
	// AdvertiseHost is the host of the advertised endpoint when Advertise
	// is empty ("": the bound host, a wildcard turned into 127.0.0.1).
	AdvertiseHost string
	// Broker is the broker's API, called in process (routes and
	// assignments, sends, transactions, recalls, client registration,
	// receives, acks, offsets); nil (codec
	// tests only): those calls are answered INTERNAL_SERVER_ERROR and
	// clients are not registered.
	Broker *broker.Broker
	// BrokerName names the broker in routes and receipt handles.
	BrokerName string
	// TLSMode is what the port accepts (as the process's --tls-mode);
	// without TLSConfig only plaintext is served.
	TLSMode netloop.TLSMode
	// TLSConfig is the server TLS configuration (the process's
	// certificate, reloaded through GetConfigForClient); nil: no TLS.
	TLSConfig *tls.Config
	// HandshakeTimeout bounds the sniff and TLS handshake (zero: default).
	HandshakeTimeout time.Duration
	// Guard, when set, is the ACL: callers must sign, internal requests
	// are signed as their account.
	Guard *auth.Guard
	// SignatureSkew bounds how far a call's signed x-mq-date-time may be
	// from the server's clock, either way (zero: DefaultSignatureSkew):
	// a captured signature is good for at most that long.
	SignatureSkew time.Duration
	// SignatureOffsets are the clock offsets the signed date may carry
	// besides UTC (the RocketMQ 5 SDKs stamp their local time with a "Z":
	// clients in UTC+8 sign with +8h); the skew applies around each.
	SignatureOffsets []time.Duration
	// MaxMessageSize is the broker's largest body: Settings'
	// max_body_size and, with a margin, the largest gRPC message taken.
	MaxMessageSize int
	// DefaultQueueNums is the queue count of a topic QueryRoute creates.
	DefaultQueueNums int
	// AcceptTypes maps a topic's attributes (GET_TOPIC_CONFIG's
	// "attributes") to the message types its route accepts (nil:
	// DefaultAcceptTypes).
	AcceptTypes func(attrs map[string]string) []v2.MessageType
	// TypeCheck reports whether sends are checked against their topic's
	// message.type (the broker's enableTopicMessageTypeCheck; answered to
	// producers as Settings' validate_message_type); nil: always.
	TypeCheck func() bool
	// IdleTimeout ends idle sessions (zero: DefaultIdleTimeout).
	IdleTimeout time.Duration
	// RequestTimeout bounds one call the gateway makes of its own accord
	// (zero: default).
	RequestTimeout time.Duration
	// ForwardSecret is the group's replication secret: a replica signs
	// the address of a client whose call it forwards to its master with
	// it, and a master takes a forwarded address only with its proof
	// (forwardfor.go); nil: no address is forwarded, and a call that
	// carries one is refused.
	ForwardSecret []byte
	// ForwardTLS, when set, is the TLS a replica dials its master's
	// endpoint with (nil: plaintext).
	ForwardTLS *tls.Config
	// Registerer receives the wheelmq_grpc_* metrics (nil: none).
	Registerer prometheus.Registerer
	// Logger logs the gateway's events.
	Logger zerolog.Logger
}

// Gateway is a running gRPC endpoint.
type Gateway struct {
	v2.UnimplementedMessagingServiceServer
	opts Options
	log  zerolog.Logger
	// verify checks each call's authorization (immutable after New).
	verify verifier
	m      *metrics
	fwd    *forwarder             // a replica's way to its master (forward.go)
	panics *prometheus.CounterVec // wheelmq_handler_panics_total (recover.go)
	srv    *grpc.Server
	ln     net.Listener
	adv    string
	sess   sessions
	stop   chan struct{}
	// stopCtx ends with Stop: calls that wait (receives) end with it.
	stopCtx    context.Context
	stopCancel context.CancelFunc
	wg         sync.WaitGroup
	once       sync.Once
	closed     chan struct{}
}

// New checks the options and builds a gateway; Start listens.
func New(o Options) (*Gateway, error) {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = 4 << 20
	}
	if o.DefaultQueueNums <= 0 {
		o.DefaultQueueNums = 4
	}
	if o.AcceptTypes == nil {
		o.AcceptTypes = DefaultAcceptTypes
	}
	if o.TypeCheck == nil {
		o.TypeCheck = func() bool { return true }
	}
	if o.SignatureSkew <= 0 {
		o.SignatureSkew = DefaultSignatureSkew
	}
	g := &Gateway{opts: o, log: o.Logger.With().Str("component", "grpc").Logger(), m: newMetrics(),
		stop: make(chan struct{}), closed: make(chan struct{})}
	g.panics = recovery.Counter(o.Registerer)
	g.fwd = newForwarder(g)
	g.verify = verifier{guard: o.Guard, skew: o.SignatureSkew, offsets: append([]time.Duration{0}, o.SignatureOffsets...), now: time.Now}
	if o.Guard != nil {
		g.verify.guard = o.Guard.Named("grpc")
	}
	g.sess.m = map[string]*session{}
	if o.Broker != nil {
		o.Broker.SetLiteNotifier(g.notifyLite)
	}
	g.stopCtx, g.stopCancel = context.WithCancel(context.Background())
	if err := g.m.register(o.Registerer); err != nil {
		return nil, fmt.Errorf("grpc gateway metrics: %w", err)
	}
	return g, nil
}

// Start listens and serves in the background.
func (g *Gateway) Start() error {
	ln, err := net.Listen("tcp", g.opts.Listen)
	if err != nil && g.opts.MoveAside && errors.Is(err, syscall.EADDRINUSE) {
		host, _, _ := net.SplitHostPort(g.opts.Listen)
		aside := net.JoinHostPort(host, "0")
		var err2 error
		if ln, err2 = net.Listen("tcp", aside); err2 == nil {
			g.log.Warn().Str("taken", g.opts.Listen).Str("listen", ln.Addr().String()).
				Msg("grpc: the default port is taken, the endpoint moved aside (clients find it through the routes of any other broker's endpoint)")
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("grpc listen %s: %w", g.opts.Listen, err)
	}
	g.ln = countingListener{Listener: ln, m: g.m}
	g.adv = g.opts.Advertise
	if g.adv == "" {
		g.adv = dialable(ln.Addr().String())
		if g.opts.AdvertiseHost != "" {
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			g.adv = net.JoinHostPort(g.opts.AdvertiseHost, port)
		}
	}
	creds := newSniffCreds(g.opts.TLSMode, g.opts.TLSConfig, g.opts.HandshakeTimeout, func(isTLS bool) {
		g.m.denied.WithLabelValues(map[bool]string{true: "tls", false: "plaintext"}[isTLS]).Inc()
	})
	opts := []grpc.ServerOption{
		grpc.Creds(creds),
		grpc.MaxRecvMsgSize(g.opts.MaxMessageSize + recvMargin),
		grpc.MaxSendMsgSize(32 * (g.opts.MaxMessageSize + recvMargin)),
		grpc.ConnectionTimeout(g.opts.HandshakeTimeout),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 60 * time.Second, Timeout: 20 * time.Second}),
		grpc.ForceServerCodecV2(newPassCodec()), // forwarded frames pass unparsed (forward.go)
		grpc.ChainUnaryInterceptor(g.m.unary, g.recoverUnary, g.forwardedForUnary, g.forwardUnary),
		grpc.ChainStreamInterceptor(g.m.stream, g.recoverStream, g.forwardedForStream, g.forwardStream),
	}
	g.srv = grpc.NewServer(append(opts, serverTuning()...)...)
	v2.RegisterMessagingServiceServer(g.srv, g)
	g.goOwned("serve", func() {
		if err := g.srv.Serve(g.ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			g.log.Error().Err(err).Msg("grpc server stopped")
		}
	})
	g.goOwned("reaper", g.reapLoop)
	g.log.Info().Str("listen", ln.Addr().String()).Str("advertise", g.adv).Str("tls_mode", creds.mode.String()).Msg("grpc gateway started")
	return nil
}

// Addr is the bound address ("" before Start).
func (g *Gateway) Addr() string {
	if g.ln == nil {
		return ""
	}
	return g.ln.Addr().String()
}

// Advertise is the address routes carry.
func (g *Gateway) Advertise() string { return g.adv }

// Stop stops serving: streams end, sessions' held auto-renew handles are
// released and their connections closed, and every goroutine is waited for
// (ctx bounds the graceful part; then calls are cut).
func (g *Gateway) Stop(ctx context.Context) error {
	g.once.Do(func() {
		close(g.stop)
		g.stopCancel()
		if g.srv != nil {
			done := make(chan struct{})
			recovery.Go(nil, func(p *recovery.Panic) { recovery.Log(g.log, p, "grpc graceful stop") }, func() {
				defer close(done)
				g.srv.GracefulStop()
			})
			select {
			case <-done:
			case <-ctx.Done():
				g.srv.Stop()
				<-done
			}
		}
		g.sess.closeAll()
		g.fwd.close()
		g.wg.Wait()
		close(g.closed)
	})
	<-g.closed
	return nil
}

// reapLoop ends idle sessions until Stop.
func (g *Gateway) reapLoop() {
	t := time.NewTicker(reapEvery(g.opts.IdleTimeout))
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case now := <-t.C:
			// A panic ends this round only: idle sessions are looked for again.
			if p := recovery.Catch(func() { g.reapIdle(now) }); p != nil {
				g.panics.WithLabelValues("internal", "grpc reaper").Inc()
				recovery.Log(g.log, p, "grpc reaper")
			}
		}
	}
}

// reapIdle ends the sessions idle at now.
func (g *Gateway) reapIdle(now time.Time) {
	for _, s := range g.sess.idle(now, g.opts.IdleTimeout) {
		g.log.Info().Str("client_id", s.id).Msg("grpc session idle: closed")
		s.end(context.Background(), false)
	}
}

// reapEvery is how often idle sessions are looked for.
func reapEvery(idle time.Duration) time.Duration {
	if d := idle / 4; d > 0 && d < 10*time.Second {
		return d
	}
	return 10 * time.Second
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
