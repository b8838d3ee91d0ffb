package timer

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// node is one broker's store with the writer, dispatch and timer stages, a
// role and an injectable clock.
type node struct {
	t     *testing.T
	dir   string
	st    *storage.Store
	wheel *timerwheel.Store
	sys   *actor.ActorSystem
	w, d  *stage.Stage
	svc   *Service
	role  *role.Holder
	clock *atomic.Int64  // ms
	conf  *fakeConfirmer // nil: no replication
	kick  *dispatch.Kicker

	mu     sync.Mutex
	writes []delivery // every write-back handed to Append
}

// delivery is one write-back as the node handed it to its writer.
type delivery struct {
	ident  string
	due    int64
	nowMs  int64 // the clock when it was handed over
	master bool  // the node's role said master then
}

func startNode(t *testing.T, dir string, kind role.Kind, clock *atomic.Int64) *node {
	return startNodeWith(t, dir, kind, clock, nil)
}

// startNodeWith starts a node; with conf its writer holds answers for conf
// and its dispatch (and DurableEnd) stops at conf's confirmed offset, as
// on a replicated broker.
func startNodeWith(t *testing.T, dir string, kind role.Kind, clock *atomic.Int64, conf *fakeConfirmer) *node {
	t.Helper()
	st, err := storage.Open(dir, storage.Options{SegmentSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, dir: dir, st: st, sys: stage.NewSystem(zerolog.Nop()), clock: clock,
		role: role.NewHolder(role.State{Kind: kind, ReplicaID: 1}), conf: conf}
	var wconf writer.Confirmer
	if conf != nil {
		conf.cl = st.CommitLog
		st.SetDurableEnd(conf)
		wconf = conf
	}
	n.wheel, err = timerwheel.Open(timerwheel.Options{Dir: st.TimerDir(), NoSync: true}, InitialDequeueMs(st, clock.Load()))
	if err != nil {
		t.Fatal(err)
	}
	reg := stage.NewRegistry(prometheus.NewRegistry())
	strat := supervisor.New(supervisor.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond})
	var k dispatch.Kicker
	var svcp atomic.Pointer[Service]
	st.Dispatched.Store(dispatch.StartOffset(st, zerolog.Nop()))
	spawn := func(name string, p stage.Producer) *stage.Stage {
		s, err := reg.Spawn(n.sys, strat, name, p)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	n.kick = &k
	n.d = spawn(dispatch.StageName, dispatch.Producer(dispatch.Options{Store: st, UpToDurableEnd: conf != nil, Notify: func(a []dispatch.Arrival) {
		for _, q := range a {
			if s := svcp.Load(); s != nil && q.Topic == Topic {
				s.KickEnqueue()
			}
		}
	}}, &k))
	n.w = spawn(writer.StageName, writer.Producer(writer.Options{Store: st, Appended: k.Kick, Confirmer: wconf}))
	n.svc, err = Start(n.sys, reg, strat, Options{Store: st, Wheel: n.wheel, Role: n.role, FlushInterval: 5 * time.Millisecond,
		Now: func() time.Time { return time.UnixMilli(clock.Load()) }, Logger: testLogger(),
		Append: func(a *writer.Append) {
			master := n.role.Get().IsMaster()
			n.mu.Lock()
			for _, rec := range a.Records {
				id, _ := isWrittenBack(rec)
				props, _ := message.PeekProperties(rec)
				out, _ := message.LookupProperty(props, message.PropTimerOutMS)
				due, _ := strconv.ParseInt(out, 10, 64)
				n.writes = append(n.writes, delivery{ident: id, due: due, nowMs: clock.Load(), master: master})
			}
			n.mu.Unlock()
			if !master {
				a.Reply(writer.Result{Err: errors.New("not master")}) // as the gated writer answers
				return
			}
			n.w.Send(a)
		}})
	if err != nil {
		t.Fatal(err)
	}
	svcp.Store(n.svc)
	k.Kick()
	t.Cleanup(n.close)
	return n
}

// testLogger is silent unless WHEELMQ_TEST_LOG is set.
func testLogger() zerolog.Logger {
	if os.Getenv("WHEELMQ_TEST_LOG") != "" {
		return zerolog.New(os.Stderr).With().Timestamp().Logger()
	}
	return zerolog.Nop()
}

func (n *node) close() {
	if n.sys == nil {
		return
	}
	n.svc.Stop()
	n.w.Stop()
	n.d.Stop()
	n.sys.Shutdown()
	_ = n.wheel.Close()
	_ = n.st.Close()
	n.sys = nil
}

func (n *node) delivered() []delivery {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]delivery(nil), n.writes...)
}

// copies returns the written-back copies in the node's CommitLog.
func (n *node) copies() map[string]int {
	out := map[string]int{}
	cl := n.st.CommitLog
	for off := cl.MinOffset(); ; {
		rec, next, err := cl.Read(off)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			n.t.Fatalf("read log at %d: %v", off, err)
		}
		if id, ok := isWrittenBack(rec); ok {
			out[id]++
		}
		off = next
	}
}

var failoverHost = netip.MustParseAddrPort("10.0.0.1:10911")

// putTimer stores a timer message (or a cancel of uniq) through the writer.
func (n *node) putTimer(uniq string, due int64, cancel bool) {
	n.t.Helper()
	props := map[string]string{message.PropRealTopic: "orders", message.PropRealQueueID: "0",
		message.PropTimerOutMS: strconv.FormatInt(due, 10)}
	if cancel {
		props[message.PropTimerDelUniqKey] = "orders+" + uniq
		props[message.PropUniqKey] = uniq + "-del"
	} else {
		props[message.PropUniqKey] = uniq
	}
	now := n.clock.Load()
	rec, err := (&message.Record{Topic: Topic, BornHost: failoverHost, StoreHost: failoverHost, Body: []byte(uniq),
		BornTimestamp: now, StoreTimestamp: now,
		Properties: message.EncodeProperties(props)}).Encode(nil)
	if err != nil {
		n.t.Fatal(err)
	}
	ch := make(chan error, 1)
	n.w.Send(&writer.Append{Key: writer.QueueKey{Topic: Topic}, Records: [][]byte{rec}, Reply: func(r writer.Result) { ch <- r.Err }})
	select {
	case err := <-ch:
		if err != nil {
			n.t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		n.t.Fatal("append not answered")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func copyLog(t *testing.T, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(src, "commitlog"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dst, "commitlog"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, "commitlog", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, "commitlog", e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTimersHandOverExactly fires half the timers on a master, builds a
// second store from a byte copy of its CommitLog, runs it as a replica
// (it fires nothing, even when more timers fall due) and promotes it: it
// fires exactly the timers whose copy was not in the log, none early, none
// twice, and never a cancelled one.
func TestTimersHandOverExactly(t *testing.T) {
	const t0 = int64(1_800_000_000_000)
	clock := &atomic.Int64{}
	clock.Store(t0)
	a := startNode(t, t.TempDir(), role.Master, clock)
	due := map[string]int64{}
	for i := 1; i <= 10; i++ {
		u := fmt.Sprintf("U%02d", i)
		due[u] = t0 + int64(i)*100
		a.putTimer(u, due[u], false)
	}
	cancelled := map[string]bool{"U03": true, "U08": true}
	for u := range cancelled {
		a.putTimer(u, due[u], true)
	}
	waitFor(t, "the master's wheel to hold every timer", func() bool { return a.wheel.Stats().Added == 12 })
	clock.Store(t0 + 550) // U01..U05 due, U03 cancelled
	want1 := []string{"U01@", "U02@", "U04@", "U05@"}
	waitFor(t, "the master to fire the due timers", func() bool { return len(a.copies()) == len(want1) })
	a.close()

	dir := t.TempDir()
	copyLog(t, a.dir, dir) // no timer store, no consume queues, no checkpoint
	b := startNode(t, dir, role.Replica, clock)
	waitFor(t, "the replica's wheel to hold every timer", func() bool { return b.wheel.Stats().Added == 12 })
	clock.Store(t0 + 650) // U06 falls due while there is no master
	time.Sleep(100 * time.Millisecond)
	if w := b.delivered(); len(w) != 0 {
		t.Fatalf("the replica wrote back %d timers: %+v", len(w), w)
	}

	b.role.Set(role.State{Kind: role.Master, ReplicaID: 1, Epoch: 2})
	waitFor(t, "the promoted node to fire U06", func() bool { return len(b.delivered()) >= 1 })
	time.Sleep(100 * time.Millisecond) // nothing else is due yet
	if w := b.delivered(); len(w) != 1 || w[0].ident[:4] != "U06@" {
		t.Fatalf("promoted node wrote back %+v, want only U06", w)
	}
	clock.Store(t0 + 2000)
	waitFor(t, "the promoted node to fire the rest", func() bool { return len(b.delivered()) >= 4 })
	time.Sleep(100 * time.Millisecond)

	got := b.copies() // the master's copies came with the log
	for _, d := range b.delivered() {
		if !d.master {
			t.Fatalf("written back while not master: %+v", d)
		}
		if d.nowMs < d.due {
			t.Fatalf("%s fired early: at %d, due %d", d.ident, d.nowMs, d.due)
		}
	}
	for u, at := range due {
		id := u + "@" + strconv.FormatInt(at, 10)
		switch {
		case cancelled[u] && got[id] != 0:
			t.Fatalf("cancelled %s delivered %d times", u, got[id])
		case !cancelled[u] && got[id] != 1:
			t.Fatalf("%s delivered %d times, want once (copies %v)", u, got[id], got)
		}
	}
}

// TestFencedMasterFiresNothing: a master that fences itself (or is
// demoted) writes nothing back while timers fall due; unfenced, it fires
// each of them once.
func TestFencedMasterFiresNothing(t *testing.T) {
	const t0 = int64(1_800_000_000_000)
	clock := &atomic.Int64{}
	clock.Store(t0)
	n := startNode(t, t.TempDir(), role.Master, clock)
	for i := 1; i <= 5; i++ {
		n.putTimer(fmt.Sprintf("F%d", i), t0+int64(i)*100, false)
	}
	waitFor(t, "the wheel to hold the timers", func() bool { return n.wheel.Stats().Added == 5 })
	clock.Store(t0 + 250) // F1, F2 due
	waitFor(t, "F1 and F2", func() bool { return len(n.copies()) == 2 })
	n.role.Set(role.State{Kind: role.Master, Epoch: 1, Fenced: true})
	clock.Store(t0 + 1000) // the rest due
	time.Sleep(150 * time.Millisecond)
	if w := n.delivered(); len(w) != 2 {
		t.Fatalf("a fenced master wrote back %d timers in all, want the 2 from before", len(w))
	}
	n.role.Set(role.State{Kind: role.Master, Epoch: 1})
	waitFor(t, "the rest once unfenced", func() bool { return len(n.copies()) == 5 })
	time.Sleep(100 * time.Millisecond)
	for id, c := range n.copies() {
		if c != 1 {
			t.Fatalf("%s written back %d times", id, c)
		}
	}
}
