package producer

import (
	"context"
	"fmt"
	"sync"
)

// limiter bounds the async sends in flight by count and by bytes. Waiters
// are served in arrival order, so a large send is not starved by small
// ones.
type limiter struct {
	mu                 sync.Mutex
	count, bytes       int // in use
	maxCount, maxBytes int
	waiters            []*permitWaiter
}

// permitWaiter is one blocked acquire.
type permitWaiter struct {
	n     int
	ready chan struct{} // closed when the permit is granted
}

func newLimiter(maxCount, maxBytes int) *limiter {
	return &limiter{maxCount: maxCount, maxBytes: maxBytes}
}

// size clamps a request to the byte bound, so a body larger than the bound
// can still go alone.
func (l *limiter) size(n int) int { return min(max(n, 0), l.maxBytes) }

// tryAcquire takes a permit of n bytes if one is free and nobody waits.
// It returns the bytes to release.
func (l *limiter) tryAcquire(n int) (int, bool) {
	n = l.size(n)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiters) == 0 && l.fits(n) {
		l.count++
		l.bytes += n
		return n, true
	}
	return n, false
}

// acquire waits for a permit of n bytes until ctx ends. It returns the bytes
// to release.
func (l *limiter) acquire(ctx context.Context, n int) (int, error) {
	n = l.size(n)
	l.mu.Lock()
	if len(l.waiters) == 0 && l.fits(n) {
		l.count++
		l.bytes += n
		l.mu.Unlock()
		return n, nil
	}
	w := &permitWaiter{n: n, ready: make(chan struct{})}
	l.waiters = append(l.waiters, w)
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
			l.grant() // a smaller waiter behind may fit now
			count, bytes := l.count, l.bytes
			l.mu.Unlock()
			return 0, fmt.Errorf("producer: waiting for an async send permit (%d in flight, %d bytes): %w",
				count, bytes, ctx.Err())
		}
	}
	l.mu.Unlock()
	return n, nil // granted while ctx ended: keep it
}

// release returns a permit of n bytes.
func (l *limiter) release(n int) {
	l.mu.Lock()
	l.count--
	l.bytes -= n
	l.grant()
	l.mu.Unlock()
}

// fits reports whether a permit of n bytes is free. Lock should be held.
func (l *limiter) fits(n int) bool {
	return l.count < l.maxCount && (l.bytes+n <= l.maxBytes || l.bytes == 0)
}

// grant hands permits to waiters in order while they fit. Lock should be
// held.
func (l *limiter) grant() {
	for len(l.waiters) > 0 && l.fits(l.waiters[0].n) {
		w := l.waiters[0]
		l.waiters = l.waiters[1:]
		l.count++
		l.bytes += w.n
		close(w.ready)
	}
}

// inUse returns the permits and bytes taken.
func (l *limiter) inUse() (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count, l.bytes
}
