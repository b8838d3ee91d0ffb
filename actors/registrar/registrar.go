// Package registrar is the stage that registers a broker with its name
// servers: REGISTER_BROKER to every name server every Interval and right
// after a topic change (coalesced), and UNREGISTER_BROKER when it stops. It
// does network I/O, so it runs as its own stage: a slow name server delays
// only registrations, never a send or a pull.
//
// # One name server never delays another
//
// Each name server has its own call: the actor starts a goroutine per
// registration and name server (bounded by Timeout, dial included) and
// goes on; the outcome comes back as a message. A name server keeps at most
// one registration in flight: asking again meanwhile queues one more, made
// with the topic table current when it starts. So a dead or hanging name
// server holds up neither the registrations with the others nor the
// actor's next message. A failed registration is retried after a second,
// with that name server only. The connection to each name server stays
// open between registrations (the name server drops a broker at once when
// it closes, like RocketMQ's BrokerHousekeepingService); when it breaks
// the broker registers again a second later, so a restarted name server
// learns the broker without waiting for the next period.
//
// # Waiting for a route
//
// Await lets a request that made a topic (the send that auto-created it,
// UPDATE_AND_CREATE_TOPIC, the heartbeat that made a group's %RETRY%
// topic) be answered only once the name servers serve the topic's route,
// so that a client that asks for it right after the answer finds it
// (RocketMQ registers such a topic oneway, after answering). The stage
// records, per name server, the version (DataVersion.Counter) of the topic
// table its last acknowledged registration carried, and of the one in
// flight. An Await names the table version that holds its topic; it is
// done once every name server acknowledged a registration of that version
// or later, when a name server's registration of such a table fails (the
// name server is down: waiting would not make it serve the route; it gets
// the topic with its next successful registration), or RouteWait after it
// was asked, whichever comes first: a hanging name server delays the
// answer by RouteWait at most, and never fails it. The last two are
// logged and counted (Metrics). An Await starts no registration of its
// own when one that carries its version is in flight: the Awaits of many
// sends creating the same topic, or topics created together, all wait for
// the same one.
//
// Every goroutine the stage starts ends when its call ends or when the
// stage stops or restarts (a context cancelled in Stopping/Restarting,
// which then waits for them). Stopping or restarting settles every Await.
package registrar

import (
	"context"
	"crypto/tls"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/recovery"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/nsrvcodec"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// StageName is the stage's stable name.
const StageName = "registrar"

// DefaultTimeout bounds one REGISTER_BROKER round trip to one name server,
// dial included.
const DefaultTimeout = 3 * time.Second

// DefaultRouteWait bounds how long an Await waits for the name servers:
// well under the clients' send timeout (3 s), so that a hanging name server
// delays the answer to the send that created a topic but never makes the
// client give up on it.
const DefaultRouteWait = time.Second

// retryAfter is how soon a failed registration is tried again: clients
// cannot route to the broker until one gets through.
const retryAfter = time.Second

// Options configures the stage.
type Options struct {
	// NameServers are the addresses registered with.
	NameServers []string
	// TLS, when not nil, is the TLS configuration of the connections to
	// the name servers (nil: plaintext).
	TLS *tls.Config
	// Interval is the period of registrations (default 30 s).
	Interval time.Duration
	// Timeout bounds one registration with one name server (default
	// DefaultTimeout).
	Timeout time.Duration
	// RouteWait bounds the wait of an Await (default DefaultRouteWait).
	RouteWait time.Duration
	// Metrics counts the Awaits done without every name server's
	// acknowledgement (nil: not counted).
	Metrics *Metrics
	// Info identifies the broker in the registrations.
	Info namesrv.BrokerInfo
	// Epoch (nil: 0) returns the broker's master epoch (role.State.Epoch),
	// sent as the registration's DataVersion.StateVersion, as RocketMQ's
	// controller-mode broker does: a name server with a controller
	// refuses a brokerId-0 registration older than the epoch it applied.
	// 0 means no replication: no check.
	Epoch func() int64
	// Credentials sign REGISTER_BROKER and UNREGISTER_BROKER, for name
	// servers with an ACL (empty: unsigned).
	Credentials auth.Credentials
	// Topics is the topic table published with each registration.
	Topics *topics.View
	// Role, when set (replication on), gives the broker id registered
	// (role.State.BrokerID: 0 while master, the replica id otherwise) and
	// the master epoch carried (as Epoch does; Epoch is then unused); Kick
	// the stage on every role change to register again at once. Nil:
	// Info.BrokerID and Epoch.
	Role   *role.Holder
	Logger zerolog.Logger
}

// current is the registration's broker info and master epoch now.
func (r *registrar) current() (namesrv.BrokerInfo, int64) {
	info := r.opts.Info
	if ep := r.kicker.grpc.Load(); ep != nil {
		info.GRPCEndpoint = *ep
	}
	if r.opts.Role == nil {
		var epoch int64
		if r.opts.Epoch != nil {
			epoch = r.opts.Epoch()
		}
		return info, epoch
	}
	st := r.opts.Role.Get()
	if st.Kind != role.Standalone {
		info.BrokerID = st.BrokerID
	}
	return info, st.Epoch
}

// Await calls Done once every name server acknowledged a registration
// whose topic table has version Version (DataVersion.Counter) or later, a
// registration of such a table failed, or RouteWait passed, whichever
// comes first (see the package doc). Ask for it with Kicker.Await, after
// the topic change was published, with the version then current
// (topics.View): an Await the Kicker took is done exactly once, also when
// the stage stops before it read it. Done runs on the stage's goroutine
// (or the caller's, when there is no stage to wait for): it must not
// block.
type Await struct {
	Version int64
	// Topics name what waits, in the log line of a wait done without
	// every name server's acknowledgement.
	Topics []string
	Done   func()

	once sync.Once
	book *Kicker // the Kicker that took it (nil: sent to the stage directly)
}

// Fail implements stage.Failable: the waiter goes on without the
// registration.
func (a *Await) Fail(error) { a.finish() }

// finish runs Done, once.
func (a *Await) finish() {
	a.once.Do(func() {
		if a.book != nil {
			a.book.forget(a)
		}
		a.Done()
	})
}

type registerNow struct{}
type registerTick struct{}

// retryFailed registers again with the name servers whose last
// registration failed.
type retryFailed struct{}

// Kicker asks the stage for a registration soon, coalescing requests: many
// topic changes between two registrations cost one. It also hands the
// stage its Awaits, and keeps them until they are done, so that the ones
// a stopping stage never read are done too.
type Kicker struct {
	stage   atomic.Pointer[stage.Stage]
	pending atomic.Bool
	// grpc is the gRPC endpoint registered (SetGRPCEndpoint; nil: the
	// one of Options.Info).
	grpc   atomic.Pointer[string]
	awaits struct {
		sync.Mutex
		closed bool                // the stage stopped for good
		open   map[*Await]struct{} // taken and not done yet
	}
}

// Kick asks for a registration soon; safe from any goroutine, a no-op
// before the stage runs.
func (k *Kicker) Kick() {
	s := k.stage.Load()
	if s != nil && k.pending.CompareAndSwap(false, true) {
		s.Send(registerNow{})
	}
}

// SetGRPCEndpoint makes every later registration carry addr as the
// broker's gRPC endpoint (namesrv.BrokerInfo.GRPCEndpoint; "": none) and
// asks for one soon. Safe from any goroutine, before or after the stage
// runs.
func (k *Kicker) SetGRPCEndpoint(addr string) {
	k.grpc.Store(&addr)
	k.Kick()
}

// Stage returns the registrar stage once spawned (nil before).
func (k *Kicker) Stage() *stage.Stage { return k.stage.Load() }

// Await has the stage wait for the name servers to acknowledge the topic
// table of version (see Await); done runs at once when there is no stage
// (not spawned yet, or stopped). Safe from any goroutine.
func (k *Kicker) Await(version int64, topics []string, done func()) {
	a := &Await{Version: version, Topics: topics, Done: done, book: k}
	s := k.stage.Load()
	k.awaits.Lock()
	if s == nil || k.awaits.closed {
		k.awaits.Unlock()
		done()
		return
	}
	if k.awaits.open == nil {
		k.awaits.open = map[*Await]struct{}{}
	}
	k.awaits.open[a] = struct{}{}
	k.awaits.Unlock()
	s.Send(a)
}

// forget drops a done Await.
func (k *Kicker) forget(a *Await) {
	k.awaits.Lock()
	delete(k.awaits.open, a)
	k.awaits.Unlock()
}

// close is the stage's last step: the Awaits it did not finish (still in
// its mailbox, which it will not read) are done now, and later ones at
// once.
func (k *Kicker) close() {
	k.awaits.Lock()
	k.awaits.closed = true
	open := k.awaits.open
	k.awaits.open = nil
	k.awaits.Unlock()
	for a := range open {
		a.finish()
	}
}

// registrar is the actor. Its fields are touched on the actor's goroutine
// only, except nameServer.conn (see there).
type registrar struct {
	opts   Options
	kicker *Kicker
	self   *stage.Stage
	tick   *stage.Timer
	retry  *stage.Timer
	expiry *stage.Timer // the deadline of the oldest waiter
	ns     []*nameServer
	// waiting are the Awaits not done yet, oldest (earliest deadline)
	// first.
	waiting []*waiter
	// ctx ends the calls and connection watchers under way (cancelled when
	// the actor stops or restarts); wg counts them.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// req is the REGISTER_BROKER request built from the table reqFrom.
	req      *remoting.Command
	reqFrom  *topics.Table
	reqID    int64  // the broker id req carries
	reqEpoch int64  // the master epoch req carries
	reqGRPC  string // the gRPC endpoint req carries
}

// Producer returns the actor producer; k is bound to the stage.
func Producer(opts Options, k *Kicker) stage.Producer {
	if opts.Interval <= 0 {
		opts.Interval = 30 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.RouteWait <= 0 {
		opts.RouteWait = DefaultRouteWait
	}
	return func(self *stage.Stage) actor.Actor {
		k.stage.Store(self)
		return &registrar{opts: opts, kicker: k, self: self, tick: self.NewTimer(), retry: self.NewTimer(),
			expiry: self.NewTimer()}
	}
}

// Receive implements actor.Actor.
func (r *registrar) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.ctx, r.cancel = context.WithCancel(context.Background())
		r.ns = make([]*nameServer, len(r.opts.NameServers))
		for i, addr := range r.opts.NameServers {
			r.ns[i] = &nameServer{addr: addr, tls: r.opts.TLS, acked: -1}
		}
		r.tick.Arm(r.opts.Interval, registerTick{})
		r.registerAll()
	case registerNow:
		r.kicker.pending.Store(false)
		r.registerAll()
	case *Await:
		r.await(m)
	case expireWaits:
		r.expire(time.Now())
	case registerTick:
		r.registerAll()
		r.tick.Arm(r.opts.Interval, registerTick{})
	case retryFailed:
		for _, n := range r.ns {
			if n.failed {
				r.register(n)
			}
		}
	case *callDone:
		r.callDone(m)
	case *connLost:
		r.connLost(m)
	case *actor.Stopping:
		r.stop()
		r.kicker.close() // before unregistering: that may take Timeout
		r.unregisterAll()
		r.closeAll()
	case *actor.Restarting:
		r.stop()
		r.closeAll()
	}
}

// registerAll registers with every name server.
func (r *registrar) registerAll() {
	for _, n := range r.ns {
		r.register(n)
	}
}

// stop ends the calls and watchers under way and waits for them: they end
// at once, their contexts being cancelled. The waiters go on.
func (r *registrar) stop() {
	r.tick.Stop()
	r.retry.Stop()
	r.expiry.Stop()
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
	for _, n := range r.ns {
		n.busy, n.again = false, false
	}
	r.settleAll()
}

// unregisterAll sends UNREGISTER_BROKER to every name server at once and
// waits for the answers, each within Timeout.
func (r *registrar) unregisterAll() {
	info, _ := r.current()
	req := nsrvcodec.NewUnregisterRequest(info)
	r.opts.Credentials.Sign(req)
	var wg sync.WaitGroup
	for _, n := range r.ns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
			defer cancel()
			var err error
			if p := recovery.Catch(func() { err = n.invoke(ctx, req, r.opts.Logger) }); p != nil {
				recovery.Log(r.opts.Logger, p, "unregister broker call")
				err = p
			}
			if err != nil {
				r.opts.Logger.Debug().Err(err).Str("namesrv", n.addr).Msg("unregister broker failed")
			}
		}()
	}
	wg.Wait()
}

func (r *registrar) closeAll() {
	for _, n := range r.ns {
		if n.conn != nil {
			_ = n.conn.Close()
			n.conn = nil
		}
	}
}
