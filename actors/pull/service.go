package pull

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/stage"
)

// ReaderName names pull reader i: "pull_read_<i>" (a stable metric label).
func ReaderName(i int) string { return "pull_read_" + strconv.Itoa(i) }

// Service is the pull stages and the state they share, which outlives
// their restarts: the readers' work in hand, the backlog, and where each
// group pulls next.
type Service struct {
	opts    Options
	readers []*stage.Stage
	load    []atomic.Int64 // messages handed to each reader and not yet done
	rr      atomic.Uint64  // where the next choice of a reader starts
	coord   atomic.Pointer[stage.Stage]
	// backlog holds what waits for a free reader, from head on; only the
	// pull stage touches it (it outlives the stage's restarts).
	backlog []any
	head    int
	queued  atomic.Int64     // the backlog's length, for metrics
	waiting atomic.Bool      // the backlog waits for a reader to finish
	kick    atomic.Bool      // a readerFree is on its way to the pull stage
	syncs   map[*syncReq]int // barriers (tests) waiting for reader acks; pull stage only
	// pulled is the nextBeginOffset of each group's last pull that found
	// messages, per queue; the readers write it, StoreTimes reads it. The
	// lock covers one map operation, never I/O.
	pulled struct {
		sync.Mutex
		m map[pulledKey]int64
	}
}

// Start spawns the pull stages under guardian: the readers first, then the
// pull stage that sends to them. Stop them with Stop.
func Start(system *actor.ActorSystem, reg *stage.Registry, guardian actor.SupervisorStrategy, opts Options) (*Service, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("pull: Store is required")
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 4 << 20
	}
	if opts.Readers <= 0 {
		opts.Readers = DefaultReaders
	}
	opts.Readers = min(opts.Readers, MaxReaders)
	if opts.MaxParkedPerConn <= 0 {
		opts.MaxParkedPerConn = DefaultMaxParkedPerConn
	}
	s := &Service{opts: opts, load: make([]atomic.Int64, opts.Readers), syncs: map[*syncReq]int{}}
	s.pulled.m = map[pulledKey]int64{}
	for i := range opts.Readers {
		st, err := reg.Spawn(system, guardian, ReaderName(i), func(*stage.Stage) actor.Actor {
			return &readerActor{svc: s, i: i, rd: reader{svc: s, opts: &s.opts}}
		})
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("pull: %w", err)
		}
		s.readers = append(s.readers, st)
	}
	coord, err := reg.Spawn(system, guardian, StageName, func(self *stage.Stage) actor.Actor {
		return &Puller{svc: s, timer: self.NewTimer(), inline: reader{svc: s, opts: &s.opts}}
	})
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("pull: %w", err)
	}
	s.coord.Store(coord)
	return s, nil
}

// Stage returns the pull stage (StageName) or a reader (ReaderName) by
// name, nil for other names.
func (s *Service) Stage(name string) *stage.Stage {
	if c := s.coord.Load(); c != nil && name == StageName {
		return c
	}
	for _, r := range s.readers {
		if r.Name() == name {
			return r
		}
	}
	return nil
}

// maxParked is the bound on the long polls parked per connection in
// force.
func (s *Service) maxParked() int {
	if f := s.opts.MaxParkedLive; f != nil {
		return f()
	}
	return s.opts.MaxParkedPerConn
}

// Readers lists the reader stages.
func (s *Service) Readers() []*stage.Stage { return s.readers }

// Stop stops the pull stage (it answers its parked pulls), then the
// readers.
func (s *Service) Stop() {
	if c := s.coord.Load(); c != nil {
		c.Stop()
	}
	for _, r := range s.readers {
		r.Stop()
	}
}

// readerDepth is how many messages a reader is handed at once: one, so
// that a slow read holds nothing but itself; the rest waits in the pull
// stage's backlog for the first reader that is free.
const readerDepth = 1

// dispatch hands msg to a free reader, or queues it in the backlog until
// one is free. It runs on the pull stage only.
func (s *Service) dispatch(msg any) {
	if s.backlogLen() == 0 && s.handOff(msg) {
		return
	}
	s.backlog = append(s.backlog, msg)
	s.queued.Store(int64(s.backlogLen()))
	s.drain()
}

// drain hands backlog messages to free readers, in order (pull stage
// only). When none is free it leaves waiting set: the next reader to
// finish a message kicks the pull stage (readerFree).
func (s *Service) drain() {
	for s.backlogLen() > 0 {
		s.waiting.Store(true) // before looking at the loads: see readerActor.done
		if !s.handOff(s.backlog[s.head]) {
			return
		}
		s.backlog[s.head] = nil
		s.head++
		s.queued.Store(int64(s.backlogLen()))
	}
	s.backlog, s.head = s.backlog[:0], 0
	s.waiting.Store(false)
}

func (s *Service) backlogLen() int { return len(s.backlog) - s.head }

// Backlog is the number of requests waiting for a free reader (safe from
// any goroutine).
func (s *Service) Backlog() int64 { return s.queued.Load() }

// handOff sends msg to a free reader (the first, from a position that
// moves on at each call, that holds less than readerDepth messages and is
// not down); false when none is free. When every reader is down, one of
// them fails msg at once.
func (s *Service) handOff(msg any) bool {
	if m, ok := msg.(*syncReq); ok { // a barrier goes to every reader, after what they hold
		s.syncs[m] = len(s.readers)
		for _, rd := range s.readers {
			rd.Send(&syncReader{req: m})
		}
		return true
	}
	n := len(s.readers)
	start := int(s.rr.Add(1) % uint64(n))
	pick, up := -1, false
	for k := range n {
		i := (start + k) % n
		if s.readers[i].Down() != nil {
			continue
		}
		up = true
		if s.load[i].Load() < readerDepth {
			pick = i
			break
		}
	}
	switch {
	case !up:
		pick = start
	case pick < 0:
		return false
	}
	s.load[pick].Add(1)
	s.readers[pick].Send(msg)
	return true
}

// failBacklog answers what waits in the backlog, reading on the calling
// stage (the pull stage when it stops for good).
func (s *Service) failBacklog(rd *reader) {
	for s.backlogLen() > 0 {
		msg := s.backlog[s.head]
		s.backlog[s.head] = nil
		s.head++
		if m, ok := msg.(*Request); ok {
			m.mayPark = false
		}
		rd.handle(msg)
	}
	s.backlog, s.head = s.backlog[:0], 0
	s.queued.Store(0)
	s.waiting.Store(false)
}

// count records an answered pull: the group's next offset and the
// statistics. Readers call it concurrently.
func (s *Service) count(r *Request, res Result, found bool) {
	msgs, bytes := 0, 0
	if found {
		msgs, bytes = res.Messages, len(res.Body)
		s.setPulled(pulledKey{r.Group, r.Topic, r.QueueID}, res.Next)
	}
	if s.opts.Served != nil {
		s.opts.Served(r.Group, r.Topic, msgs, bytes)
	}
}

func (s *Service) setPulled(k pulledKey, next int64) {
	s.pulled.Lock()
	s.pulled.m[k] = next
	s.pulled.Unlock()
}

// pulledAt is where the group pulls next in the queue, if known.
func (s *Service) pulledAt(k pulledKey) (int64, bool) {
	s.pulled.Lock()
	defer s.pulled.Unlock()
	next, ok := s.pulled.m[k]
	return next, ok
}

// parkReq is a long poll a reader found nothing for, for the pull stage to
// park: before is the queue's end before the read, resp the answer to give
// when it is not parked.
type parkReq struct {
	r      *Request
	before int64
	resp   Result
}

// Fail implements stage.Failable.
func (m *parkReq) Fail(err error) { m.r.Fail(err) }

// readerActor is a pull_read stage: it does the reads of the requests the
// pull stage hands it.
type readerActor struct {
	svc *Service
	i   int
	rd  reader
}

// Receive implements actor.Actor.
func (a *readerActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Request, *ReadAt, *SearchByTime, *StoreTimes, *SearchQueues, *ReadQueue, *Inspect:
		defer a.done()
		a.rd.handle(m)
	case *syncReader:
		a.svc.coord.Load().Send(&syncAck{req: m.req})
	}
}

// done takes one message off the reader's work in hand (also when the
// message panicked) and, when the backlog waits for a reader, kicks the
// pull stage (once until it drained). The load drops before waiting is
// read, and drain sets waiting before it reads the loads: one of the two
// sees the other.
func (a *readerActor) done() {
	s := a.svc
	s.load[a.i].Add(-1)
	if s.waiting.Load() && s.kick.CompareAndSwap(false, true) {
		s.coord.Load().Send(readerFree{})
	}
}

// readerFree tells the pull stage that a reader finished a message while
// the backlog waited.
type readerFree struct{}

// handle serves one read message (on a reader, or on the pull stage when
// it answers its backlog on stop).
func (p *reader) handle(msg any) {
	switch m := msg.(type) {
	case *Request:
		p.serve(m, m.mayPark)
	case *ReadAt:
		rec, _, err := p.opts.Store.CommitLog.Read(m.Offset)
		m.Reply(rec, err)
	case *SearchByTime:
		m.Reply(p.searchByTime(m))
	case *StoreTimes:
		p.storeTimes(m)
	case *ReadQueue:
		p.readQueue(m)
	case *SearchQueues:
		p.searchQueues(m)
	case *Inspect:
		p.inspect(m)
	}
}
