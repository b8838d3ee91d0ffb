package mqclient

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/recovery"
	"github.com/wheelmq/wheelmq/storage/message"
)

// registry holds the running instances by client id.
var registry struct {
	sync.Mutex
	m map[string]*Instance
}

// Instance is the client state shared by the producers of one client id:
// connections, routes and heartbeats. Its methods are safe for concurrent
// use.
type Instance struct {
	cfg  Config
	id   string
	log  zerolog.Logger
	uniq *message.UniqKeyGenerator

	refs int // guarded by registry

	conns  connTable
	routes routeTable
	nsNext atomic.Int32 // index of the name server tried first

	groups struct {
		sync.Mutex
		producers map[string]struct{}
	}

	// ctx ends when the instance stops; every background request derives
	// from it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the refresher and the heartbeater

	refreshKick chan struct{}
	dirty       struct {
		sync.Mutex
		topics map[string]struct{}
	}
}

// Acquire returns the running Instance of cfg's client id, or starts one.
// Each successful Acquire must be paired with one Release. It fails when cfg
// has no name server, or when an instance with the same client id runs
// with other name servers, another header encoding, other credentials or
// another TLS configuration (give the producer its own InstanceName then).
func Acquire(cfg Config) (*Instance, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	id := cfg.ClientID()
	registry.Lock()
	defer registry.Unlock()
	if inst := registry.m[id]; inst != nil {
		if !sameNetwork(inst.cfg, cfg) {
			return nil, fmt.Errorf("client id %s runs with %s, asked for %s: %w",
				id, describeNetwork(inst.cfg), describeNetwork(cfg), ErrConfigConflict)
		}
		inst.refs++
		return inst, nil
	}
	inst := start(cfg, id)
	inst.refs = 1
	if registry.m == nil {
		registry.m = map[string]*Instance{}
	}
	registry.m[id] = inst
	return inst, nil
}

// start creates an instance and its goroutines.
func start(cfg Config, id string) *Instance {
	inst := &Instance{
		cfg:         cfg,
		id:          id,
		log:         cfg.Logger.With().Str("client_id", id).Logger(),
		uniq:        message.NewUniqKeyGenerator(cfg.ClientIP, os.Getpid(), rand.Int32()),
		refreshKick: make(chan struct{}, 1),
	}
	inst.ctx, inst.cancel = context.WithCancel(context.Background())
	inst.conns.m = map[string]*connSlot{}
	inst.routes.m = map[string]*routeEntry{}
	inst.routes.inflight = map[string]*routeCall{}
	inst.groups.producers = map[string]struct{}{}
	inst.dirty.topics = map[string]struct{}{}
	report := func(kind string) func(*recovery.Panic) {
		return func(p *recovery.Panic) { recovery.Log(inst.log, p, "client instance "+kind) }
	}
	// A panic restarts the loop a second later (routes and heartbeats
	// must go on), until Release.
	recovery.Supervise(&inst.wg, inst.ctx.Done(), time.Second, report("route refresh"), inst.refreshLoop)
	recovery.Supervise(&inst.wg, inst.ctx.Done(), time.Second, report("heartbeats"), inst.heartbeatLoop)
	inst.log.Debug().Strs("namesrv", cfg.NameServers).Msg("client instance started")
	return inst
}

// Release drops one reference; the last one stops the instance: its
// goroutines end and its connections close (requests in flight fail with
// remoting.ErrClosed). It waits for all of that.
func (i *Instance) Release() {
	registry.Lock()
	i.refs--
	last := i.refs == 0
	if last && registry.m[i.id] == i {
		delete(registry.m, i.id)
	}
	registry.Unlock()
	if !last {
		return
	}
	i.cancel()
	i.wg.Wait()
	i.conns.closeAll()
	i.log.Debug().Msg("client instance stopped")
}

// ID returns the client id, "IP@instanceName".
func (i *Instance) ID() string { return i.id }

// Config returns the instance's configuration with defaults filled in.
func (i *Instance) Config() Config {
	c := i.cfg
	c.NameServers = slices.Clone(c.NameServers)
	return c
}

// UniqKeys returns the generator of UNIQ_KEY message ids of this client.
func (i *Instance) UniqKeys() *message.UniqKeyGenerator { return i.uniq }

// Logger returns the instance's logger.
func (i *Instance) Logger() zerolog.Logger { return i.log }

// RegisterProducer adds group to the producer groups named in heartbeats.
// A group can be registered once per instance.
func (i *Instance) RegisterProducer(group string) error {
	i.groups.Lock()
	defer i.groups.Unlock()
	if _, dup := i.groups.producers[group]; dup {
		return fmt.Errorf("producer group %s on client %s: %w", group, i.id, ErrDuplicateGroup)
	}
	i.groups.producers[group] = struct{}{}
	return nil
}

// UnregisterProducer removes group and tells the connected brokers
// (UNREGISTER_CLIENT, 35), waiting at most DefaultHeartbeatTimeout.
func (i *Instance) UnregisterProducer(group string) {
	i.groups.Lock()
	delete(i.groups.producers, group)
	i.groups.Unlock()
	i.unregister(group)
}

// producerGroups returns the registered producer groups, sorted.
func (i *Instance) producerGroups() []string {
	i.groups.Lock()
	defer i.groups.Unlock()
	out := make([]string, 0, len(i.groups.producers))
	for g := range i.groups.producers {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// isNameServer reports whether addr is one of the configured name servers.
func (i *Instance) isNameServer(addr string) bool {
	return slices.Contains(i.cfg.NameServers, addr)
}
