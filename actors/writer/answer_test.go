package writer

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// pooled hands out Appends the way the router's fast path does: from a
// pool, each Reply counting its answer, then resetting the Append and
// putting it back for the next send at once. A writer that looks at an
// Append after its Reply sees a recycled (or already reused) one.
type pooled struct {
	mu      sync.Mutex
	free    []*pooledSend
	answers map[int][]Result // per send id, in order
	body    map[int]string   // per send id, the body sent
	size    map[int]int      // per send id, the record's size
	next    int
	done    chan int // the id of every answer
}

type pooledSend struct {
	p   *pooled
	id  int // the send it carries now
	app Append
}

func newPooled() *pooled {
	return &pooled{answers: map[int][]Result{}, body: map[int]string{}, size: map[int]int{}, done: make(chan int, 1024)}
}

// get fills a (possibly recycled) Append with rec for a new send and
// returns it and the send's id.
func (p *pooled) get(k QueueKey, rec []byte) (*Append, int) {
	body := "" // a broken record has none
	if d, _, err := message.Decode(rec); err == nil {
		body = string(d.Body)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var s *pooledSend
	if n := len(p.free); n > 0 {
		s, p.free = p.free[n-1], p.free[:n-1]
	} else {
		s = &pooledSend{p: p}
		s.app.Reply = s.reply
	}
	s.id = p.next
	p.next++
	p.body[s.id], p.size[s.id] = body, len(rec)
	s.app.Key, s.app.Records = k, [][]byte{rec}
	return &s.app, s.id
}

func (s *pooledSend) reply(res Result) {
	p := s.p
	res.Offsets = append([]int64(nil), res.Offsets...) // valid until the Append is reused
	res.Out = nil
	p.mu.Lock()
	id := s.id
	p.answers[id] = append(p.answers[id], res)
	s.app.Records = nil
	s.app.Reset()
	p.free = append(p.free, s)
	p.mu.Unlock()
	p.done <- id
}

// await waits until every send in ids was answered at least once.
func (p *pooled) await(t *testing.T, ids ...int) {
	t.Helper()
	want := map[int]bool{}
	for _, id := range ids {
		want[id] = true
	}
	p.mu.Lock()
	for id := range want {
		if len(p.answers[id]) > 0 {
			delete(want, id)
		}
	}
	p.mu.Unlock()
	deadline := time.After(wait)
	for len(want) > 0 {
		select {
		case id := <-p.done:
			delete(want, id)
		case <-deadline:
			t.Fatalf("sends %v not answered", want)
		}
	}
}

// once returns the one answer of send id, failing the test when it got
// none or more than one.
func (p *pooled) once(t *testing.T, id int) Result {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.answers[id]); n != 1 {
		t.Errorf("append %d answered %d times: %+v", id, n, p.answers[id])
		if n == 0 {
			return Result{Err: errors.New("no answer")}
		}
	}
	return p.answers[id][0]
}

// holdFirstAppend returns a Fault hook that holds the writer after its
// first append until release is closed, and a channel closed once it holds.
func holdFirstAppend() (fault func(), held, release chan struct{}) {
	held, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	return func() { once.Do(func() { close(held); <-release }) }, held, release
}

// oneDrain pushes sends into the writer's inbox while it is held in an
// earlier drain, so that they are written by one drain, and returns their
// ids. The first send is the one the writer is held in.
func oneDrain(t *testing.T, r *rig, in *Inbox, p *pooled, held, release chan struct{}, k QueueKey,
	recs [][]byte) (first int, ids []int) {
	t.Helper()
	a, first := p.get(k, record(t, k.Topic, k.QueueID, "hold"))
	in.Push(a)
	select {
	case <-held:
	case <-time.After(wait):
		t.Fatal("the writer never took the first append")
	}
	for _, rec := range recs {
		a, id := p.get(k, rec)
		in.Push(a)
		ids = append(ids, id)
	}
	close(release)
	return first, ids
}

// checkStored reads send id's record back at the offset it was answered
// with.
func checkStored(t *testing.T, r *rig, p *pooled, id int, res Result) {
	t.Helper()
	if res.Err != nil || len(res.Offsets) != 1 {
		t.Errorf("append %d: %+v, want stored", id, res)
		return
	}
	d, _, err := message.Decode(mustRead(t, r.st, res.Offsets[0], p.size[id]))
	if err != nil {
		t.Fatalf("append %d at %d: %v", id, res.Offsets[0], err)
	}
	if string(d.Body) != p.body[id] || d.QueueOffset != res.QueueOffset {
		t.Errorf("append %d at %d holds %q at queue offset %d, want %q at %d", id, res.Offsets[0], d.Body,
			d.QueueOffset, p.body[id], res.QueueOffset)
	}
}

// sendMore sends n more appends (reusing the recycled Appends) one by one
// and checks each is stored and answered once: the writer is healthy, and
// the drains before are over (it is sequential), so no late answer of
// theirs can come after.
func sendMore(t *testing.T, r *rig, in *Inbox, p *pooled, k QueueKey, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		a, id := p.get(k, record(t, k.Topic, k.QueueID, fmt.Sprintf("after-%d", i)))
		in.Push(a)
		p.await(t, id)
		checkStored(t, r, p, id, p.once(t, id))
	}
}

// TestMixedDrainAnswersEachAppendOnce writes a drain of three appends whose
// middle one the CommitLog refuses (a broken magic code): the combined
// write fails and is retried append by append. Each Append is answered
// exactly once, the stored ones with offsets where their records are, the
// broken one with an error; the Appends are recycled as the router's are,
// so an answer given twice shows up on the send that reuses it.
func TestMixedDrainAnswersEachAppendOnce(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			r := newRig(t)
			in := NewInbox()
			fault, held, release := holdFirstAppend()
			r.start(t, Options{Mode: mode, Inbox: in, Fault: fault, FlushInterval: time.Hour})
			k := QueueKey{"A", 0}
			bad := record(t, k.Topic, k.QueueID, "drain-1")
			bad[4] ^= 0xff // break the magic: the CommitLog refuses the record
			p := newPooled()
			first, ids := oneDrain(t, r, in, p, held, release, k,
				[][]byte{record(t, k.Topic, k.QueueID, "drain-0"), bad, record(t, k.Topic, k.QueueID, "drain-2")})
			p.await(t, append(ids, first)...)
			sendMore(t, r, in, p, k, 3)
			checkStored(t, r, p, first, p.once(t, first))
			checkStored(t, r, p, ids[0], p.once(t, ids[0]))
			if res := p.once(t, ids[1]); res.Err == nil {
				t.Errorf("append %d with a broken record: %+v, want an error", ids[1], res)
			}
			checkStored(t, r, p, ids[2], p.once(t, ids[2]))
			if down := r.metrics.Down(); len(down) > 0 {
				t.Fatalf("stages down: %v", down)
			}
		})
	}
}

// TestDiskFullFailsOnlyTheLargeWrite fills the disk so that only writes
// over 8 KiB fail (ENOSPC after half of them is written, as a disk filling
// up does): a drain of small, large, small appends fails its combined
// write, and the retry append by append stores the small ones and refuses
// the large one. Each is answered once, the stored ones readable at their
// offsets; later sends succeed, a large one too once the disk has room.
func TestDiskFullFailsOnlyTheLargeWrite(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			fs := &vfstest.FaultFS{}
			r := newRigFS(t, fs)
			in := NewInbox()
			fault, held, release := holdFirstAppend()
			r.start(t, Options{Mode: mode, Inbox: in, Fault: fault, FlushInterval: 10 * time.Millisecond})
			k := QueueKey{"A", 0}
			large := record(t, k.Topic, k.QueueID, string(make([]byte, 32<<10)))
			p := newPooled()
			fs.FailWritesOver(8 << 10)
			first, ids := oneDrain(t, r, in, p, held, release, k,
				[][]byte{record(t, k.Topic, k.QueueID, "drain-0"), large, record(t, k.Topic, k.QueueID, "drain-2")})
			p.await(t, append(ids, first)...)
			sendMore(t, r, in, p, k, 3)
			if !fs.Hit() {
				t.Fatal("no write was refused")
			}
			checkStored(t, r, p, first, p.once(t, first))
			checkStored(t, r, p, ids[0], p.once(t, ids[0]))
			if res := p.once(t, ids[1]); !errors.Is(res.Err, syscall.ENOSPC) {
				t.Errorf("large append %d: %+v, want ENOSPC", ids[1], res)
			}
			checkStored(t, r, p, ids[2], p.once(t, ids[2]))
			fs.Reset()
			a, id := p.get(k, large)
			in.Push(a)
			p.await(t, id)
			checkStored(t, r, p, id, p.once(t, id))
			offs := storedQueueOffsets(t, r.st)[k]
			for i, o := range offs {
				if o != int64(i) {
					t.Fatalf("queue offsets %v are not consecutive", offs)
				}
			}
			if len(offs) != 7 {
				t.Fatalf("%d records stored, want 7 (the refused one not among them)", len(offs))
			}
			if down := r.metrics.Down(); len(down) > 0 {
				t.Fatalf("stages down: %v", down)
			}
		})
	}
}

// TestPanicInDrainAnswersEachAppendOnce makes the writer panic in the
// middle of a drain whose first append was answered already (async flush:
// stored and answered; or, in both modes, the refused one): the rescue
// answers only the appends not answered yet, each once, the stage
// restarts, and later sends are stored.
func TestPanicInDrainAnswersEachAppendOnce(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			r := newRig(t)
			in := NewInbox()
			held, release := make(chan struct{}), make(chan struct{})
			var calls atomic.Int32
			fault := func() {
				switch calls.Add(1) {
				case 1: // the holding append
					close(held)
					<-release
				case 3: // the drain's last append, once stored
					panic("injected fault after an append")
				}
			}
			r.start(t, Options{Mode: mode, Inbox: in, Fault: fault, FlushInterval: time.Hour})
			k := QueueKey{"A", 0}
			bad := record(t, k.Topic, k.QueueID, "drain-1")
			bad[4] ^= 0xff
			p := newPooled()
			first, ids := oneDrain(t, r, in, p, held, release, k,
				[][]byte{record(t, k.Topic, k.QueueID, "drain-0"), bad, record(t, k.Topic, k.QueueID, "drain-2")})
			p.await(t, append(ids, first)...)
			waitFor(t, "the writer's restart", func() bool { return r.restarts(t) >= 1 })
			sendMore(t, r, in, p, k, 3)
			checkStored(t, r, p, first, p.once(t, first))
			checkStored(t, r, p, ids[0], p.once(t, ids[0]))
			if res := p.once(t, ids[1]); res.Err == nil {
				t.Errorf("append %d with a broken record: %+v, want an error", ids[1], res)
			}
			checkStored(t, r, p, ids[2], p.once(t, ids[2])) // stored before the panic: answered as stored
			if n := r.restarts(t); n != 1 {
				t.Errorf("%v restarts, want 1", n)
			}
			if down := r.metrics.Down(); len(down) > 0 {
				t.Fatalf("stages down: %v", down)
			}
		})
	}
}
