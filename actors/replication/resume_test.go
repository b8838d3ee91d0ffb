package replication

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// TestReceiverRestartResumes: while the master keeps appending, the
// replica's connection is cut several times and its service restarted;
// it resumes from its CommitLog end and ends byte-identical (no byte
// written twice or skipped).
func TestReceiverRestartResumes(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	m, rs := group(t, 1, []int64{1, 2}, nil)
	r := rs[0]
	stopWriter := make(chan struct{})
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		wr := rand.New(rand.NewSource(6))
		for {
			select {
			case <-stopWriter:
				return
			default:
			}
			m.appendRecords(wr, 1+wr.Intn(10))
			time.Sleep(time.Millisecond)
		}
	}()
	for i := 0; i < 6; i++ {
		time.Sleep(time.Duration(20+rng.Intn(60)) * time.Millisecond)
		if i%2 == 0 {
			// The connection breaks: the follower reconnects by itself.
			m.svc.dropConns()
		} else {
			// The replica process restarts (same store).
			r.stop()
			r.start()
		}
	}
	close(stopWriter)
	<-wrote
	end := m.store.CommitLog.MaxOffset()
	waitFor(t, "replica caught up after the restarts", 10*time.Second, func() bool { return caughtUp(m, r) })
	waitFor(t, "confirmed", 5*time.Second, func() bool { return m.svc.Confirmed() == end })
	sameLog(t, m, r)
}

// TestSyncStateSetShrinkAndExpand: a member that stops acknowledging is
// proposed out after LagTimeout; once back and caught up, proposed in.
func TestSyncStateSetShrinkAndExpand(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	m, rs := group(t, 1, []int64{1, 2}, func(o *Options) { o.LagTimeout = 300 * time.Millisecond })
	r := rs[0]
	// Two appends, each acked: from the second ack on, the master holds
	// the replica caught up at a time no earlier than caughtFrom (the first
	// ack), so it may propose the shrink no earlier than LagTimeout after
	// caughtFrom. (Timing from r.stop() would be wrong: the replica's last
	// catch-up may precede the stop by any amount under load.)
	caughtFrom := time.Now()
	waitAcked(t, m, 2, m.appendRecords(rng, 5))
	waitAcked(t, m, 2, m.appendRecords(rng, 5))
	r.stop()
	m.appendRecords(rng, 10)
	p := nextProposal(t, m)
	if !slices.Equal(p, []int64{1}) {
		t.Fatalf("proposed %v, want [1]", p)
	}
	if d := time.Since(caughtFrom); d < 300*time.Millisecond {
		t.Fatalf("shrink proposed %v after the replica was last caught up, before LagTimeout", d)
	}
	m.role.Set(masterState(1, 1)) // the controller applied it
	end := m.appendRecords(rng, 5)
	waitFor(t, "confirmed without member 2", 5*time.Second, func() bool { return m.svc.Confirmed() == end })
	r.start()
	waitFor(t, "caught up again", 5*time.Second, func() bool { return caughtUp(m, r) })
	if p := nextProposal(t, m); !slices.Equal(p, []int64{1, 2}) {
		t.Fatalf("proposed %v, want [1 2]", p)
	}
}

// waitAcked waits until m holds replica id's acknowledged end at off or
// past it.
func waitAcked(t *testing.T, m *node, id, off int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("replica %d acked %d", id, off), 5*time.Second, func() bool {
		for _, r := range m.svc.Replicas() {
			if r.ReplicaID == id {
				return r.Acked >= off
			}
		}
		return false
	})
}

// nextProposal waits for the master's next sync-state set proposal.
func nextProposal(t *testing.T, m *node) []int64 {
	t.Helper()
	select {
	case p := <-m.proposals:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no sync-state set proposal")
		return nil
	}
}

// TestRestartedReplicaConfirmsNothingAlone: a replica restarted without
// its master does not count its own log as confirmed; it is confirmed
// again once the (restarted) master reports.
func TestRestartedReplicaConfirmsNothingAlone(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	m, rs := group(t, 1, []int64{1, 2}, nil)
	r := rs[0]
	end := m.appendRecords(rng, 20)
	waitFor(t, "replica confirmed", 5*time.Second, func() bool { return r.svc.Confirmed() == end })
	m.stop()
	r.stop()
	r.start()
	time.Sleep(100 * time.Millisecond)
	if c := r.svc.Confirmed(); c != 0 {
		t.Fatalf("restarted replica confirmed %d on its own", c)
	}
	m.start() // a new HA port
	r.follow(m, 2, 1)
	waitFor(t, "confirmed again", 5*time.Second, func() bool { return r.svc.Confirmed() == end })
}
