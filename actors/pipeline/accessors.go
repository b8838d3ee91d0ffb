package pipeline

// The pipeline's accessors: the views, stages and stores the router, the
// gRPC gateway and the process read.

import (
	"time"

	"github.com/wheelmq/wheelmq/actors/acl"
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// Appends is the commitlog writer's inbox: Push a *writer.Append to have it
// stored and answered (the writer takes everything queued in one batch).
func (p *Pipeline) Appends() *writer.Inbox { return p.appends }

// Config is the configuration the pipeline was opened with.
func (p *Pipeline) Config() *Config { return &p.cfg }

// Store is the open store.
func (p *Pipeline) Store() *storage.Store { return p.store }

// Wheel is the open timer store.
func (p *Pipeline) Wheel() *timerwheel.Store { return p.wheel }

// Topics is the published topic table.
func (p *Pipeline) Topics() *topics.View { return &p.topicView }

// Groups is the published subscription-group table.
func (p *Pipeline) Groups() *groups.View { return &p.groupView }

// Resets lists the consumer-offset resets that wait for the group's next
// pull.
func (p *Pipeline) Resets() *offsets.ResetView { return &p.resetView }

// ACL is the ACL 2.0 users and policies (actors/acl) that the admin
// requests 3001-3010 manage; as an auth.Directory (always the latest
// snapshot) the request checks join it with the plain_acl.yml accounts.
func (p *Pipeline) ACL() *acl.View { return &p.aclView }

// Stats is the latest published statistics snapshot.
func (p *Pipeline) Stats() *stats.View { return &p.statsView }

// Counters are the running totals behind Stats.
func (p *Pipeline) Counters() *stats.Counters { return &p.counters }

// Booted is when the pipeline was opened.
func (p *Pipeline) Booted() time.Time { return p.booted }

// Subscriptions is the published subscription table.
func (p *Pipeline) Subscriptions() *clients.View { return &p.subView }

// Stage returns a spawned stage by name (nil when there is none; the timer
// stages are included).
func (p *Pipeline) Stage(name string) *stage.Stage {
	p.mu.RLock()
	s := p.byName[name]
	p.mu.RUnlock()
	if s == nil {
		if ps := p.pulls.Load(); ps != nil {
			s = ps.Stage(name)
		}
	}
	if s == nil {
		if ts := p.timers.Load(); ts != nil {
			return ts.Stage(name)
		}
	}
	return s
}

// Pop is the POP engine (nil until its stage was spawned).
func (p *Pipeline) Pop() *pop.Engine { return p.popEngine.Load() }

// Pulls is the pull side's stages (nil until they were spawned).
func (p *Pipeline) Pulls() *pull.Service { return p.pulls.Load() }

// TransactionWatermark is the smallest CommitLog offset that unfinished
// transactions still need: the half messages of open transactions, the
// half messages the transaction stage has not read yet, and the start of
// its restart scan (config/transactions.json ScanFrom). CommitLog retention
// must not delete a segment holding bytes at or above it (besides keeping
// everything not yet dispatched). With no transaction open, unread or
// ending, the restart scan is not needed and the watermark follows the
// CommitLog end. It is -1 until the transaction stage started; it is
// updated every TransactionTick. Safe from any goroutine.
func (p *Pipeline) TransactionWatermark() int64 { return p.txLow.Load() }

// Down lists the stages stopped for good, with their causes; empty while
// the broker is healthy.
func (p *Pipeline) Down() []*stage.DownError { return p.stages.Down() }

// SetGRPCEndpoint has the registrar publish addr as the broker's gRPC
// endpoint with every registration from now on (actors/registrar,
// Kicker.SetGRPCEndpoint), and register soon.
func (p *Pipeline) SetGRPCEndpoint(addr string) { p.regKicker.SetGRPCEndpoint(addr) }
