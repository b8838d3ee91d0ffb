package replication

import (
	"slices"
	"sort"

	"github.com/wheelmq/wheelmq/actors/role"
)

// WaitConfirmed calls done(true) once Confirmed() >= end, or done(false)
// when the broker is not (or stops being) an unfenced master, when the
// sync-state set is smaller than MinInSync, or on Stop. done runs on an
// arbitrary goroutine and must not block.
func (s *Service) WaitConfirmed(end int64, done func(ok bool)) {
	s.mu.Lock()
	st := s.cur
	select {
	case <-s.stop:
		s.mu.Unlock()
		done(false)
		return
	default:
	}
	if !st.IsMaster() || (st.Kind == role.Master && syncStateSize(st) < s.o.MinInSync) {
		s.mu.Unlock()
		done(false)
		return
	}
	s.waiters.push(waiter{end: end, done: done})
	s.mu.Unlock()
	s.advance()
}

// failWaiters answers every pending WaitConfirmed with false.
func (s *Service) failWaiters() {
	s.mu.Lock()
	ws := s.waiters
	s.waiters = nil
	s.mu.Unlock()
	for _, w := range ws {
		w.done(false)
	}
}

// waiter is one WaitConfirmed call.
type waiter struct {
	end  int64
	done func(bool)
}

// waitHeap keeps waiters sorted by end (released in offset order).
type waitHeap []waiter

func (h *waitHeap) push(w waiter) {
	i := sort.Search(len(*h), func(i int) bool { return (*h)[i].end > w.end })
	*h = slices.Insert(*h, i, w)
}

func (h *waitHeap) pop() waiter {
	w := (*h)[0]
	*h = (*h)[1:]
	return w
}
