package replication

import (
	"math/rand"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
)

// BenchmarkAppend compares a single store with a master replicating to
// one and two replicas (every sync-state set member must ack): each op
// appends a batch of 32 records of 1 KiB and waits until it is confirmed
// (inflight=16: up to 16 batches wait at once).
// With sync flush the writer fsyncs each batch and replicas fsync before
// acking.
func BenchmarkAppend(b *testing.B) {
	for _, flush := range []bool{false, true} {
		for _, replicas := range []int{0, 1, 2} {
			name := map[bool]string{false: "async", true: "sync"}[flush] + "/replicas=" + string(rune('0'+replicas))
			b.Run(name, func(b *testing.B) { benchAppend(b, replicas, flush, 1) })
			b.Run(name+"/inflight=16", func(b *testing.B) { benchAppend(b, replicas, flush, 16) })
		}
	}
}

// benchAppend runs the benchmark with up to inflight batches waiting for
// confirmation at once (a writer serving many producers).
func benchAppend(b *testing.B, replicas int, flush bool, inflight int) {
	tweak := func(o *Options) { o.FlushSync = flush; o.HeartbeatInterval = 500 * time.Millisecond }
	sss := []int64{1}
	for i := 0; i < replicas; i++ {
		sss = append(sss, int64(i+2))
	}
	m := newNode(b, masterState(1, sss...), tweak)
	if err := m.epochs.Append(1, 0); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < replicas; i++ {
		r := newNode(b, role.State{}, tweak)
		r.follow(m, int64(i+2), 1)
	}
	rng := rand.New(rand.NewSource(1))
	recs := make([][]byte, 32)
	for i := range recs {
		recs[i] = makeRecord(1024, rng.Int())
	}
	done := make(chan bool, inflight)
	wait := func() {
		select {
		case ok := <-done:
			if !ok {
				b.Fatal("not confirmed")
			}
		case <-time.After(10 * time.Second):
			b.Fatal("confirmation timed out")
		}
	}
	b.SetBytes(32 * 1024)
	b.ResetTimer()
	pending := 0
	for i := 0; i < b.N; i++ {
		if _, err := m.store.CommitLog.Append(recs); err != nil {
			b.Fatal(err)
		}
		if flush {
			if err := m.store.CommitLog.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		end := m.store.CommitLog.MaxOffset()
		m.svc.Appended(end)
		m.svc.WaitConfirmed(end, func(ok bool) { done <- ok })
		if pending++; pending == inflight {
			wait()
			pending--
		}
	}
	for ; pending > 0; pending-- {
		wait()
	}
}
