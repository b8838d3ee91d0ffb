package timerwheel

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentStages runs the stages as the actors will: one goroutine
// adds, one dequeues (Due, Ack), one flushes, while a fake clock advances.
// Run with -race. Every timer comes out exactly once and never early.
func TestConcurrentStages(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	const n = 20_000
	var clock atomic.Int64
	clock.Store(T0)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)

	wg.Add(1)
	go func() { // enqueue-put
		defer wg.Done()
		batch := make([]Timer, 0, 100)
		for id := int64(1); id <= n; id++ {
			now := clock.Load()
			batch = append(batch, timerAt(id, now+id%1500-100))
			if len(batch) == cap(batch) {
				if err := s.Add(batch, now); err != nil {
					errs <- err
					return
				}
				batch = batch[:0]
			}
		}
	}()
	wg.Add(1)
	go func() { // flusher
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Flush(); err != nil {
				errs <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Add(1)
	go func() { // clock
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			clock.Add(1)
			time.Sleep(20 * time.Microsecond)
		}
	}()

	seen := make(map[int64]bool, n)
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < n { // dequeue-get + dequeue-put
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d released; stats %+v", len(seen), n, s.Stats())
		}
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		now := clock.Load()
		b, err := s.Due(now, 500)
		if err != nil {
			t.Fatal(err)
		}
		for _, tm := range b.Timers {
			if tm.DeliverMs > now {
				t.Fatalf("early: %d > %d", tm.DeliverMs, now)
			}
			if seen[tm.CommitLogOffset] {
				t.Fatalf("timer %d released twice", tm.CommitLogOffset)
			}
			seen[tm.CommitLogOffset] = true
		}
		if err := s.Ack(b); err != nil {
			t.Fatal(err)
		}
		if b.Len() == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	close(stop)
	wg.Wait()
}
