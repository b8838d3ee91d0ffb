package producer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/recovery"
	"github.com/wheelmq/wheelmq/cmd/internal/client/mqclient"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// ErrClosed reports a send on a closed producer.
var ErrClosed = errors.New("producer: closed")

// Producer sends messages to the brokers of a RocketMQ (or wheelmq)
// cluster. It is safe for concurrent use.
type Producer struct {
	cfg  config
	inst *mqclient.Instance
	log  zerolog.Logger

	rr               roundRobin
	faults           *faultTable // nil when fault tolerance is off
	limit            *limiter
	zlib             zlibWriters
	defaultQueueNums string
	serialize        remoting.SerializeType // header encoding of requests
	ops              sync.Pool              // *op

	work    chan completion // async completions, for the workers
	workers sync.WaitGroup

	mu     sync.RWMutex
	closed bool
	active sync.WaitGroup // sync calls and async sends not yet finished
}

// completion is work on an async send for a worker: by default the
// answer to its attempt (in the op).
type completion struct {
	op *op
	// done means the send is over: run its callback with res and err.
	done bool
	// retry means the next attempt is due (after a backoff).
	retry bool
	res   *SendResult
	err   error
}

// New starts a producer. It needs at least one name server
// (WithNameServers). Producers with the same client id share one
// mqclient.Instance; their groups must differ.
func New(opts ...Option) (*Producer, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	inst, err := mqclient.Acquire(cfg.client)
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	if err := inst.RegisterProducer(cfg.group); err != nil {
		inst.Release()
		return nil, fmt.Errorf("producer: %w", err)
	}
	p := &Producer{
		cfg:              cfg,
		inst:             inst,
		log:              cfg.log,
		limit:            newLimiter(cfg.maxInflight, cfg.maxInflightBytes),
		zlib:             zlibWriters{level: cfg.compressLevel},
		defaultQueueNums: strconv.Itoa(inst.Config().DefaultTopicQueueNums),
		serialize:        inst.Config().Serialize(),
		work:             make(chan completion, cfg.maxInflight),
	}
	if cfg.faultTolerance {
		p.faults = &faultTable{}
	}
	p.workers.Add(cfg.callbackWorkers)
	for range cfg.callbackWorkers {
		go p.worker()
	}
	return p, nil
}

// Close stops the producer: new sends fail with ErrClosed, sends under way
// finish (each is bounded by its deadlines) and their callbacks run, then
// the producer group is unregistered from the brokers and the client
// instance released (closed with the last producer). It must not be called
// from a callback or a hook. Calling it again does nothing.
func (p *Producer) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.active.Wait()
	close(p.work)
	p.workers.Wait()
	p.inst.UnregisterProducer(p.cfg.group)
	p.inst.Release()
	return nil
}

// ClientID returns the id of the client instance the producer uses.
func (p *Producer) ClientID() string { return p.inst.ID() }

// Group returns the producer group.
func (p *Producer) Group() string { return p.cfg.group }

// Route returns the writable queues of topic, looking the route up if it
// is not cached (a tool can use it to spread its own load).
func (p *Producer) Route(ctx context.Context, topic string) ([]Queue, error) {
	pub, err := p.inst.PublishRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	return append([]Queue(nil), pub.Queues...), nil
}

// InflightAsync returns the async sends in flight and their body bytes.
func (p *Producer) InflightAsync() (int, int) { return p.limit.inUse() }

// enter registers a send; it fails once the producer is closed.
func (p *Producer) enter() error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	p.active.Add(1)
	return nil
}

// worker runs async completions and callbacks until Close.
func (p *Producer) worker() {
	defer p.workers.Done()
	for c := range p.work {
		// A panic (an application's callback) is that send's alone: the
		// worker goes on with the next completion.
		if pn := recovery.Catch(func() { p.complete(c) }); pn != nil {
			recovery.Log(p.log, pn, "producer callback worker")
		}
	}
}

// complete runs one completion: a callback, a retry or the end of a send.
func (p *Producer) complete(c completion) {
	switch {
	case c.done:
		c.op.callback(c.res, c.err)
	case c.retry:
		c.op.stepAsync(true)
	default:
		c.op.completeAsync()
	}
}

// post hands a completion to the workers. It never blocks: every queued
// completion belongs to an async send holding a permit, and the queue holds
// as many completions as there are permits.
func (p *Producer) post(c completion) { p.work <- c }
