package storage

import (
	"sync"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/corruption"
)

// damage holds the consume-queue damage readers found and the dispatcher
// has yet to repair.
type damage struct {
	sync.Mutex
	units map[consumequeue.QueueID]int64 // lowest damaged unit per queue
	wake  func()                         // wakes the dispatcher (may be nil)
}

// OnCorruption returns the store's corruption policy (Options.OnCorruption).
func (s *Store) OnCorruption() corruption.Policy { return s.policy }

// Corruption returns the store's corruption metrics (nil: not counted).
func (s *Store) Corruption() *corruption.Metrics { return s.corrupt }

// ReportCorruption counts and logs a damaged range of one of the store's
// files (once per range, see corruption.Metrics.Report).
func (s *Store) ReportCorruption(log zerolog.Logger, r corruption.Range) bool {
	return s.corrupt.Report(log, r)
}

// ReportDamagedUnit tells the dispatcher, the only writer of the consume
// queues, that unit index of queue id does not lead to its record: it
// rebuilds the queue from that unit on from the CommitLog. Safe from any
// goroutine (pull, timer stages).
func (s *Store) ReportDamagedUnit(id consumequeue.QueueID, index int64) {
	s.damage.Lock()
	if s.damage.units == nil {
		s.damage.units = map[consumequeue.QueueID]int64{}
	}
	if cur, ok := s.damage.units[id]; !ok || index < cur {
		s.damage.units[id] = index
	}
	wake := s.damage.wake
	s.damage.Unlock()
	if wake != nil {
		wake()
	}
}

// TakeDamagedUnits returns and forgets the damaged units reported so far:
// the lowest reported unit index per queue. The dispatcher calls it.
func (s *Store) TakeDamagedUnits() map[consumequeue.QueueID]int64 {
	s.damage.Lock()
	defer s.damage.Unlock()
	out := s.damage.units
	s.damage.units = nil
	return out
}

// OnDamagedUnit registers the function ReportDamagedUnit calls to wake the
// dispatcher (nil: none).
func (s *Store) OnDamagedUnit(wake func()) {
	s.damage.Lock()
	s.damage.wake = wake
	s.damage.Unlock()
}
