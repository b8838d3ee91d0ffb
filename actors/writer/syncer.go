package writer

import (
	"fmt"
	"sync"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/commitlog"
)

// syncer is the sync-flush group commit: one goroutine that fsyncs the
// CommitLog and then answers every append written before that fsync began.
// The writer keeps appending while an fsync runs; the next fsync covers all
// of it, so under load each fsync serves everything that arrived during the
// previous one, with no extra mailbox hop on the way.
type syncer struct {
	cl       *commitlog.CommitLog
	onSync   func()
	onFailed func() // after an fsync failed (the log is then failed); must not block
	log      zerolog.Logger

	mu      sync.Mutex
	pending []pendingReply // written, waiting for an fsync (guarded by mu)

	wake chan struct{} // capacity 1: coalesced wake-ups
	stop chan struct{}
	done chan struct{}
}

type pendingReply struct {
	reply  func(Result)
	result Result
}

func startSyncer(cl *commitlog.CommitLog, onSync, onFailed func(), log zerolog.Logger) *syncer {
	s := &syncer{cl: cl, onSync: onSync, onFailed: onFailed, log: log,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

// add queues replies for records already appended (so an fsync starting
// after add covers them).
func (s *syncer) add(p ...pendingReply) {
	s.mu.Lock()
	s.pending = append(s.pending, p...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *syncer) loop() {
	defer close(s.done)
	for {
		select {
		case <-s.wake:
			s.flush()
		case <-s.stop:
			s.flush()
			return
		}
	}
}

// flush fsyncs once and answers everything pending before it.
func (s *syncer) flush() {
	s.mu.Lock()
	batch := s.pending
	s.pending = nil
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	err := s.cl.Sync()
	if s.onSync != nil {
		s.onSync()
	}
	if err != nil {
		s.log.Error().Err(err).Int("appends", len(batch)).Msg("commitlog fsync failed")
	}
	for _, p := range batch {
		r := p.result
		if err != nil {
			r = Result{Err: fmt.Errorf("commitlog fsync: %w", err)}
		}
		p.reply(r)
	}
	if err != nil && s.onFailed != nil {
		s.onFailed()
	}
}

// close answers what is pending (after a last fsync) and stops the goroutine.
func (s *syncer) close() {
	close(s.stop)
	<-s.done
}
