package writer

import (
	"fmt"
	"sync"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/netloop"
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
	pending []*Append // written, waiting for an fsync (guarded by mu)
	spare   []*Append // the other buffer (guarded by mu)
	out     netloop.Outbox

	wake chan struct{} // capacity 1: coalesced wake-ups
	stop chan struct{}
	done chan struct{}
}

func startSyncer(cl *commitlog.CommitLog, onSync, onFailed func(), log zerolog.Logger) *syncer {
	s := &syncer{cl: cl, onSync: onSync, onFailed: onFailed, log: log,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

// add queues the replies of appends already written (so an fsync starting
// after add covers them).
func (s *syncer) add(appends []*Append) {
	s.mu.Lock()
	s.pending = append(s.pending, appends...)
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
	s.pending, s.spare = s.spare[:0], nil
	s.mu.Unlock()
	if len(batch) == 0 {
		s.recycle(batch)
		return
	}
	err := s.cl.Sync()
	if s.onSync != nil {
		s.onSync()
	}
	if err != nil {
		s.log.Error().Err(err).Int("appends", len(batch)).Msg("commitlog fsync failed")
	}
	for _, m := range batch {
		r := m.result
		if err != nil {
			r = Result{Err: fmt.Errorf("commitlog fsync: %w", err)}
		}
		r.Out = &s.out
		m.Reply(r)
	}
	s.out.Flush()
	s.recycle(batch)
	if err != nil && s.onFailed != nil {
		s.onFailed()
	}
}

// recycle keeps an answered batch's slice for reuse.
func (s *syncer) recycle(batch []*Append) {
	clear(batch)
	s.mu.Lock()
	if s.spare == nil {
		s.spare = batch[:0]
	}
	s.mu.Unlock()
}

// close answers what is pending (after a last fsync) and stops the goroutine.
func (s *syncer) close() {
	close(s.stop)
	<-s.done
}
