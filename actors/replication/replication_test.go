package replication

import (
	"errors"
	"math/rand"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/storage/ha"
)

// group starts a master (replica id 1, epoch 1, sync-state set sss) and
// replicas with ids 2.. following it.
func group(t *testing.T, replicas int, sss []int64, tweak func(*Options)) (*node, []*node) {
	t.Helper()
	m := newNode(t, masterState(1, sss...), tweak)
	if err := m.epochs.Append(1, 0); err != nil {
		t.Fatal(err)
	}
	var rs []*node
	for i := 0; i < replicas; i++ {
		id := int64(i + 2)
		r := newNode(t, role.State{}, tweak)
		r.follow(m, id, 1)
		rs = append(rs, r)
	}
	return m, rs
}

func TestReplicasByteIdentical(t *testing.T) {
	for _, flushSync := range []bool{false, true} {
		t.Run(map[bool]string{false: "async", true: "sync"}[flushSync], func(t *testing.T) {
			rng := rand.New(rand.NewSource(1))
			m, rs := group(t, 2, []int64{1, 2, 3}, func(o *Options) { o.FlushSync = flushSync })
			var end int64
			for i := 0; i < 40; i++ {
				if flushSync {
					// The writer fsyncs before it tells the service.
					m.appendRecords(rng, 1+rng.Intn(40))
					if err := m.store.CommitLog.Sync(); err != nil {
						t.Fatal(err)
					}
					m.svc.Appended(m.store.CommitLog.MaxOffset())
				} else {
					m.appendRecords(rng, 1+rng.Intn(40))
				}
				end = m.store.CommitLog.MaxOffset()
			}
			if end < 10*testSegment {
				t.Fatalf("only %d bytes: the test should cross many segments", end)
			}
			waitFor(t, "confirmed = master end", 10*time.Second, func() bool { return m.svc.Confirmed() == end })
			for _, r := range rs {
				waitFor(t, "replica confirmed", 5*time.Second, func() bool { return r.svc.Confirmed() == end })
				sameLog(t, m, r)
			}
			st := m.svc.Replicas()
			if len(st) != 2 || st[0].LagBytes != 0 || !st[0].InSync || !st[1].Connected {
				t.Fatalf("replica status %+v", st)
			}
		})
	}
}

func TestWaitConfirmedNeedsEverySyncStateMember(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	m, rs := group(t, 1, []int64{1, 2, 3}, nil) // member 3 is absent
	end := m.appendRecords(rng, 20)
	waitFor(t, "replica 2 caught up", 5*time.Second, func() bool { return caughtUp(m, rs[0]) })
	got := make(chan bool, 4)
	m.svc.WaitConfirmed(end, func(ok bool) { got <- ok })
	select {
	case ok := <-got:
		t.Fatalf("released (%v) without member 3", ok)
	case <-time.After(300 * time.Millisecond):
	}
	if c := m.svc.Confirmed(); c >= end {
		t.Fatalf("confirmed %d without member 3", c)
	}
	// Member 3 joins: now every member holds the bytes.
	r3 := newNode(t, role.State{}, nil)
	r3.follow(m, 3, 1)
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("done(false) after all members acked")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not released after member 3 caught up")
	}
	// Waiters are released in offset order. Member 3 steps out first so
	// that both waiters are pending when they are registered: had it
	// acked end3 before end2's waiter existed, releasing end3 first would
	// be right.
	r3.stop()
	waitFor(t, "member 3 disconnected", 5*time.Second, func() bool {
		for _, r := range m.svc.Replicas() {
			if r.ReplicaID == 3 {
				return !r.Connected
			}
		}
		return true
	})
	end2 := m.appendRecords(rng, 5)
	end3 := m.appendRecords(rng, 5)
	order := make(chan int64, 2)
	m.svc.WaitConfirmed(end3, func(bool) { order <- end3 })
	m.svc.WaitConfirmed(end2, func(bool) { order <- end2 })
	r3.start() // still a replica of m: it reconnects and catches up
	for _, want := range []int64{end2, end3} {
		select {
		case o := <-order:
			if o != want {
				t.Fatalf("released %d before %d", o, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("not released")
		}
	}
	// Fenced: pending and new waits fail.
	end4 := m.appendRecords(rng, 1) + 1<<40
	m.svc.WaitConfirmed(end4, func(ok bool) { got <- ok })
	st := m.role.Get()
	st.Fenced = true
	m.role.Set(st)
	for i := 0; i < 2; i++ {
		if i == 1 {
			m.svc.WaitConfirmed(end4, func(ok bool) { got <- ok })
		}
		select {
		case ok := <-got:
			if ok {
				t.Fatal("done(true) on a fenced master")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("fenced master kept the waiter")
		}
	}
}

func TestMinInSync(t *testing.T) {
	m, _ := group(t, 0, []int64{1}, func(o *Options) { o.MinInSync = 2 })
	got := make(chan bool, 1)
	m.svc.WaitConfirmed(1, func(ok bool) { got <- ok })
	if ok := <-got; ok {
		t.Fatal("released with a sync-state set below MinInSync")
	}
}

// TestDivergentTailTruncated: a replica that wrote an epoch of its own
// (an old master's unconfirmed tail) cuts it at the consistent point and
// then holds the new master's log byte for byte.
func TestDivergentTailTruncated(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	a, rs := group(t, 1, []int64{1, 2}, nil)
	b := rs[0]
	common := a.appendRecords(rng, 30)
	waitFor(t, "b caught up", 5*time.Second, func() bool { return caughtUp(a, b) })
	// b leaves and writes epoch 2 on its own (it was master for a while).
	b.role.Set(role.State{Kind: role.Master, ReplicaID: 2, Epoch: 2, SyncStateSet: []int64{2}})
	if err := b.epochs.Append(2, common); err != nil {
		t.Fatal(err)
	}
	b.appendRecords(rng, 25)
	// a is elected at epoch 3 and writes other bytes.
	a.role.Set(masterState(3, 1, 2))
	if err := a.epochs.Append(3, common); err != nil {
		t.Fatal(err)
	}
	end := a.appendRecords(rng, 10)
	if b.store.CommitLog.MaxOffset() <= common {
		t.Fatal("no divergent tail")
	}
	b.follow(a, 2, 3)
	waitFor(t, "b caught up at epoch 3", 5*time.Second, func() bool { return caughtUp(a, b) })
	waitFor(t, "confirmed", 5*time.Second, func() bool { return a.svc.Confirmed() == end })
	sameLog(t, a, b)
	// A fresh replica gets both epochs from the start: no frame spans
	// the boundary, and its epoch file ends equal to the master's.
	c := newNode(t, role.State{}, nil)
	c.follow(a, 3, 3)
	waitFor(t, "fresh replica caught up", 5*time.Second, func() bool { return caughtUp(a, c) })
	sameLog(t, a, c)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Equal(b.truncated, []int64{common}) {
		t.Fatalf("OnTruncate calls %v, want [%d]", b.truncated, common)
	}
}

// TestOlderEpochFrameRefused: a master that sends bytes of an older epoch
// than the replica's log already holds is refused; nothing is appended.
func TestOlderEpochFrameRefused(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	src := newNode(t, masterState(2), nil) // only its log is used: the bytes
	e1 := src.appendRecords(rng, 5)
	e2 := src.appendRecords(rng, 5)
	e3 := src.appendRecords(rng, 5)
	span := func(from, max int64) ([]byte, int64) {
		b, next, err := src.store.CommitLog.ReadRaw(from, int(max))
		if err != nil {
			panic(err) // the source log is local and whole
		}
		return b, next
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	result := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			result <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if err := acceptAsMaster(c, testSecret, ln.Addr().String()); err != nil {
			result <- err
			return
		}
		r := ha.NewReader(c)
		if _, err := r.Next(); err != nil {
			result <- err
			return
		}
		reply := ha.HandshakeReply{OK: true, MasterEpoch: 2, MaxOffset: e3, Epochs: []ha.Epoch{{Epoch: 1, Start: 0}, {Epoch: 2, Start: e1}}}
		_, _ = c.Write(ha.AppendFrame(nil, reply))
		if _, err := r.Next(); err != nil { // first ack
			result <- err
			return
		}
		send := func(from, to int64, ep ha.Epoch) {
			for off := from; off < to; {
				b, next := span(off, to-off)
				if len(b) > 0 {
					_, _ = c.Write(ha.AppendFrame(nil, ha.Transfer{Offset: off, Epoch: ep.Epoch, EpochStart: ep.Start, Body: b}))
				}
				off = next
			}
		}
		send(0, e1, ha.Epoch{Epoch: 1, Start: 0})
		send(e1, e2, ha.Epoch{Epoch: 2, Start: e1})
		send(e2, e3, ha.Epoch{Epoch: 1, Start: 0}) // stale: epoch 1 after epoch 2
		for {                                      // read acks until the replica hangs up
			if _, err := r.Next(); err != nil {
				result <- nil
				return
			}
		}
	}()
	rep := newNode(t, role.State{}, nil)
	rep.role.Set(role.State{Kind: role.Replica, ReplicaID: 2, BrokerID: 2, Epoch: 2, MasterHAAddr: ln.Addr().String()})
	select {
	case err := <-result:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("replica did not hang up on the stale frame")
	}
	if got := rep.store.CommitLog.MaxOffset(); got != e2 {
		t.Fatalf("replica end %d, want %d (epoch-1 bytes after epoch 2 must be refused)", got, e2)
	}
	if last, _ := rep.epochs.Last(); last != (ha.Epoch{Epoch: 2, Start: e1}) {
		t.Fatalf("replica epochs %v", rep.epochs.Entries())
	}
	if !errors.Is(rep.svc.receive(ha.Transfer{Offset: e2, Epoch: 1, Body: []byte{1}}, 2), ErrStaleEpoch) {
		t.Fatal("receive accepted an older epoch")
	}
}
