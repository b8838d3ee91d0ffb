package broker

import (
	"net/netip"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/storage/message"
)

// Broker is the API of one broker: the calls every front door makes. It
// holds no state of its own beyond what the calls share (the advertised
// address and the unique-key generator); the state belongs to the stages
// of its pipeline.
type Broker struct {
	p   *pipeline.Pipeline
	cfg *pipeline.Config
	log zerolog.Logger

	ready     atomic.Bool // Serve was called: advertise and uniq are set
	advertise netip.AddrPort
	uniq      *message.UniqKeyGenerator
	authz     Authorizer // the ACL (nil: none)

	routes  routeState   // the gRPC endpoint and the name-server lookup (route.go)
	consume consumeState // the consumption calls' share (consume.go)
	pulls   pullStages   // the stages of the pull path (pull.go)
	send    sendState    // the send family's (send.go)
	clients clientState  // the client calls' (clients.go)
	resets  resetState   // who is told of offset resets (groupprogress.go)
	cluster clusterState // the cluster lookup (cluster.go)
	master  masterState  // a replica's master endpoint (master.go)
	lite    liteState    // the lite topics (litestate.go)
}

// New returns the API over p's stages. Calls are refused with Busy until
// Serve is called.
func New(p *pipeline.Pipeline) *Broker {
	b := &Broker{p: p, cfg: p.Config(), log: p.Config().Logger}
	b.send.init(b)
	b.clients.init(b)
	return b
}

// Serve starts serving calls once the broker's advertised address is
// known: it is written into message ids and stored records, and the
// unique-key generator is seeded from it.
func (b *Broker) Serve(advertise netip.AddrPort, uniq *message.UniqKeyGenerator) {
	b.advertise, b.uniq = advertise, uniq
	b.ready.Store(true)
}

// Ready reports whether Serve was called.
func (b *Broker) Ready() bool { return b.ready.Load() }

// Advertise is the broker's advertised remoting address (valid once Ready).
func (b *Broker) Advertise() netip.AddrPort { return b.advertise }

// Uniq is the generator of message unique keys (valid once Ready).
func (b *Broker) Uniq() *message.UniqKeyGenerator { return b.uniq }

// Pipeline is the broker's pipeline of stages.
func (b *Broker) Pipeline() *pipeline.Pipeline { return b.p }

// Detached is a Broker with a configuration and an advertised address but
// no stages: for codec tests that only read configuration. Any call that
// needs a stage panics.
func Detached(cfg *pipeline.Config, advertise netip.AddrPort) *Broker {
	b := &Broker{cfg: cfg, log: cfg.Logger, advertise: advertise}
	b.ready.Store(true)
	return b
}
