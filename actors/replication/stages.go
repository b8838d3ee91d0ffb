package replication

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/storage/commitlog"
)

// Stable stage names (metrics are labelled by them only).
const (
	// SenderStageName is the master side: the HA port's accept loop and
	// every replica connection (sender and ack reader).
	SenderStageName = "ha-sender"
	// ReceiverStageName is the replica side: the connection to the master.
	ReceiverStageName = "ha-receiver"
)

// Supervision of the two stages: the restart backoff paces reconnects
// (50 ms doubling to 2 s, as the follower's own retry did), failures count
// for restartWindow only (a stream that ran that long without failing
// reconnects at once after its next failure), and restartLimit is out of
// reach at that pace: a stage is stopped for good only by a fatal error (a
// failed or corrupt CommitLog, supervisor.ErrFatal), never by a master
// that stays away.
const (
	restartInitial = 50 * time.Millisecond
	restartMax     = 2 * time.Second
	restartLimit   = 1000
	restartWindow  = 10 * time.Second
)

// strategy is the supervisor of the service's stages.
func (s *Service) strategy() *supervisor.Strategy {
	retire := s.o.Retire
	if retire == nil {
		retire = s.o.Stages.Retire
	}
	return supervisor.New(supervisor.Policy{
		Initial: restartInitial, Max: restartMax, MaxRestarts: restartLimit, Window: restartWindow,
		Fatal:  []error{commitlog.ErrFailed, commitlog.ErrCorrupt},
		Logger: s.log, OnRestart: s.o.Stages.Restarted, Retire: retire,
	})
}

// ownFailure marks a failure of the master's own side of a replica
// connection (reading its CommitLog, an injected fault): it fails the
// sender stage. A failure of the connection itself (the replica went
// away, a bad ack) ends only that connection; the replica's receiver
// reconnects.
type ownFailure struct{ err error }

func (e ownFailure) Error() string { return e.err.Error() }
func (e ownFailure) Unwrap() error { return e.err }

// errInjected is the error of an injected fault (tests).
var errInjected = errors.New("replication: injected fault")

// faults are test hooks: the next n calls fail with errInjected.
type faults struct {
	mu   sync.Mutex
	recv int // receive: a transfer frame's append
	send int // send: a read of the master's log
}

func (f *faults) hit(n *int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *n > 0 {
		*n--
		return errInjected
	}
	return nil
}

// Messages of the sender stage.
type (
	acceptFailed struct {
		gen int64
		err error
	}
	connEnded struct {
		gen  int64
		addr string
		err  error
	}
)

// sender is the master side's actor. Its instance owns the accept
// goroutine and the goroutines of every replica connection: Started
// starts the accept loop; Stopping and Restarting unblock it (a deadline
// on the listener, which stays open), close the connections and wait.
type sender struct {
	s    *Service
	self *stage.Stage
	gen  int64
	quit chan struct{}
	wg   sync.WaitGroup
}

// Receive implements actor.Actor.
func (a *sender) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.start()
	case *acceptFailed:
		if m.gen == a.gen {
			panic(fmt.Errorf("replication: accept: %w", m.err))
		}
	case *connEnded:
		if m.gen != a.gen {
			return
		}
		var own ownFailure
		if errors.As(m.err, &own) {
			panic(fmt.Errorf("replication: sending to %s: %w", m.addr, m.err))
		}
		if m.err != nil {
			a.s.log.Warn().Err(m.err).Str("replica_addr", m.addr).Msg("replication: replica connection ended")
		}
	case *actor.Stopping, *actor.Restarting:
		a.stop()
	}
}

func (a *sender) start() {
	s := a.s
	a.gen = s.gen.Add(1)
	a.quit = make(chan struct{})
	if s.tcp != nil {
		_ = s.tcp.SetDeadline(time.Time{})
	}
	gen := a.gen
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := s.catchErr("accept", func() error { a.acceptLoop(gen); return nil }); err != nil {
			a.self.Send(&acceptFailed{gen: gen, err: err})
		}
	}()
}

// stop ends the instance's goroutines and waits for them.
func (a *sender) stop() {
	s := a.s
	if a.quit == nil {
		return
	}
	s.mu.Lock()
	close(a.quit)
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	if s.tcp != nil {
		_ = s.tcp.SetDeadline(time.Now()) // unblocks Accept, keeps the port
	}
	a.wg.Wait()
}

func (a *sender) stopping() bool {
	select {
	case <-a.quit:
		return true
	default:
		return false
	}
}

// acceptLoop accepts replica connections until the instance stops; a
// failure of the listener is reported to the actor.
func (a *sender) acceptLoop(gen int64) {
	s := a.s
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if a.stopping() || errors.Is(err, net.ErrClosed) {
				return
			}
			a.self.Send(&acceptFailed{gen: gen, err: err})
			return
		}
		s.mu.Lock()
		if a.stopping() {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		a.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer a.wg.Done()
			err := s.catchErr("replica connection", func() error { return s.serve(c, &a.wg) })
			if a.stopping() {
				return
			}
			a.self.Send(&connEnded{gen: gen, addr: c.RemoteAddr().String(), err: err})
		}()
	}
}

// target is what the receiver follows: the master's HA address and epoch
// (zero: nothing).
type target struct {
	addr  string
	epoch int64
}

// Messages of the receiver stage.
type (
	retarget    struct{}
	redial      struct{ gen int64 }
	streamEnded struct {
		gen       int64
		connected bool
		err       error
	}
)

// stream is one connection of the receiver to the master, run by a
// goroutine the receiver's instance owns.
type stream struct {
	target
	gen  int64
	quit chan struct{}
	done chan struct{}

	mu   sync.Mutex
	conn net.Conn // guarded by mu
}

// close stops the stream and waits for its goroutine.
func (f *stream) close() {
	f.mu.Lock()
	close(f.quit)
	if f.conn != nil {
		_ = f.conn.Close()
	}
	f.mu.Unlock()
	<-f.done
}

// setConn records the live connection; false when the stream is closing.
func (f *stream) setConn(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.quit:
		return false
	default:
	}
	f.conn = c
	return true
}

// receiver is the replica side's actor: it follows the service's target.
// A dial that fails is retried by the instance (backoff from minBackoff
// to maxBackoff, reset when the target changes); a failure once connected
// (handshake refused, connection broken, a bad frame, an append error)
// fails the stage, and the new instance resumes from the CommitLog end
// (AppendRaw accepts bytes only there: none is written twice or skipped).
type receiver struct {
	s       *Service
	self    *stage.Stage
	timer   *stage.Timer
	cur     *stream
	waiting *target // a redial of it is armed
	waitGen int64
	backoff time.Duration
}

// Receive implements actor.Actor.
func (a *receiver) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.backoff = minBackoff
		a.follow()
	case retarget:
		a.follow()
	case redial:
		if a.waiting != nil && m.gen == a.waitGen {
			a.waiting = nil
			a.follow()
		}
	case *streamEnded:
		if a.cur == nil || m.gen != a.cur.gen {
			return
		}
		t := a.cur.target
		<-a.cur.done
		a.cur = nil
		if m.connected {
			panic(fmt.Errorf("replication: following %s at epoch %d: %w", t.addr, t.epoch, m.err))
		}
		a.s.log.Warn().Err(m.err).Str("master", t.addr).Int64("epoch", t.epoch).Dur("retry_in", a.backoff).
			Msg("replication: dialing the master failed")
		a.waiting, a.waitGen = &t, a.s.gen.Add(1)
		a.timer.Arm(a.backoff, redial{gen: a.waitGen})
		a.backoff = min(2*a.backoff, maxBackoff)
	case *actor.Stopping, *actor.Restarting:
		a.timer.Stop()
		if a.cur != nil {
			a.cur.close()
			a.cur = nil
		}
	}
}

// follow brings the stream in line with the service's target.
func (a *receiver) follow() {
	t := a.s.followTarget()
	if a.cur != nil && a.cur.target != t {
		a.cur.close()
		a.cur = nil
	}
	if a.waiting != nil && *a.waiting != t {
		a.timer.Stop()
		a.waiting, a.backoff = nil, minBackoff
	}
	if t.addr == "" || a.cur != nil || a.waiting != nil {
		return
	}
	f := &stream{target: t, gen: a.s.gen.Add(1), quit: make(chan struct{}), done: make(chan struct{})}
	a.cur = f
	go func() {
		defer close(f.done)
		var connected bool
		err := a.s.catchErr("stream", func() (err error) {
			connected, err = a.s.followOnce(f)
			return err
		})
		select {
		case <-f.quit:
			return
		default:
		}
		a.self.Send(&streamEnded{gen: f.gen, connected: connected, err: err})
	}()
}

// spawnStages spawns the sender (when there is a listener) and the
// receiver.
func (s *Service) spawnStages() error {
	strat := s.strategy()
	if s.ln != nil {
		st, err := s.o.Stages.Spawn(s.system, strat, SenderStageName, func(self *stage.Stage) actor.Actor {
			return &sender{s: s, self: self}
		})
		if err != nil {
			return fmt.Errorf("replication: %w", err)
		}
		s.sender = st
	}
	st, err := s.o.Stages.Spawn(s.system, strat, ReceiverStageName, func(self *stage.Stage) actor.Actor {
		return &receiver{s: s, self: self, timer: self.NewTimer()}
	})
	if err != nil {
		return fmt.Errorf("replication: %w", err)
	}
	s.receiver = st
	return nil
}

// followTarget is the receiver's current target.
func (s *Service) followTarget() target {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.follow
}
