package producer

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// limiter bounds the async sends in flight by count and by bytes. Taking
// and returning a permit is one atomic operation while nobody waits;
// waiters queue under a lock and are served in arrival order, so a large
// send is not starved by small ones.
type limiter struct {
	// state packs the permits taken (high 32 bits) and their bytes (low 32
	// bits).
	state              atomic.Uint64
	waiting            atomic.Int32 // len(waiters)
	maxCount, maxBytes uint64

	mu      sync.Mutex
	waiters []*permitWaiter
}

// permitWaiter is one blocked acquire.
type permitWaiter struct {
	n     int
	ready chan struct{} // closed when the permit is granted
}

// newLimiter bounds the permits to maxCount and their bytes to maxBytes
// (each at most 2^32-1).
func newLimiter(maxCount, maxBytes int) *limiter {
	clamp := func(v int) uint64 { return uint64(min(max(v, 1), math.MaxUint32)) }
	return &limiter{maxCount: clamp(maxCount), maxBytes: clamp(maxBytes)}
}

// size clamps a request to the byte bound, so a body larger than the bound
// can still go alone.
func (l *limiter) size(n int) int { return int(min(uint64(max(n, 0)), l.maxBytes)) }

// take takes a permit of n bytes if one is free.
func (l *limiter) take(n int) bool {
	for {
		s := l.state.Load()
		count, bytes := s>>32, s&math.MaxUint32
		if count >= l.maxCount || bytes+uint64(n) > l.maxBytes && bytes != 0 {
			return false
		}
		if l.state.CompareAndSwap(s, s+1<<32+uint64(n)) {
			return true
		}
	}
}

// tryAcquire takes a permit of n bytes if one is free and nobody waits.
// It returns the bytes to release.
func (l *limiter) tryAcquire(n int) (int, bool) {
	n = l.size(n)
	return n, l.waiting.Load() == 0 && l.take(n)
}

// acquire waits for a permit of n bytes until ctx ends. It returns the bytes
// to release.
func (l *limiter) acquire(ctx context.Context, n int) (int, error) {
	n = l.size(n)
	if l.waiting.Load() == 0 && l.take(n) {
		return n, nil
	}
	w := &permitWaiter{n: n, ready: make(chan struct{})}
	l.mu.Lock()
	l.waiters = append(l.waiters, w)
	l.waiting.Add(1)
	l.grant() // a permit may have come back meanwhile
	l.mu.Unlock()
	select {
	case <-w.ready:
		return n, nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	for i, x := range l.waiters {
		if x == w {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			l.waiting.Add(-1)
			l.grant() // a smaller waiter behind may fit now
			count, bytes := l.inUse()
			l.mu.Unlock()
			return 0, fmt.Errorf("producer: waiting for an async send permit (%d in flight, %d bytes): %w",
				count, bytes, ctx.Err())
		}
	}
	l.mu.Unlock()
	return n, nil // granted while ctx ended: keep it
}

// release returns a permit of n bytes and, when someone waits, grants what
// now fits.
func (l *limiter) release(n int) {
	l.state.Add(^(1<<32 + uint64(n) - 1)) // subtract one permit and n bytes
	if l.waiting.Load() > 0 {
		l.mu.Lock()
		l.grant()
		l.mu.Unlock()
	}
}

// grant hands permits to waiters in order while they fit. Lock should be
// held.
func (l *limiter) grant() {
	for len(l.waiters) > 0 && l.take(l.waiters[0].n) {
		w := l.waiters[0]
		l.waiters[0] = nil
		l.waiters = l.waiters[1:]
		l.waiting.Add(-1)
		close(w.ready)
	}
}

// inUse returns the permits and bytes taken.
func (l *limiter) inUse() (int, int) {
	s := l.state.Load()
	return int(s >> 32), int(s & math.MaxUint32)
}
