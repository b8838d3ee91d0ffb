package writer

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/storage/message"
)

// fakeConfirmer records every WaitConfirmed; the test answers them.
type fakeConfirmer struct {
	mu    sync.Mutex
	calls []confirmCall
	added chan struct{}
}

type confirmCall struct {
	end  int64
	done func(bool)
}

func newFakeConfirmer() *fakeConfirmer { return &fakeConfirmer{added: make(chan struct{}, 1024)} }

func (f *fakeConfirmer) WaitConfirmed(end int64, done func(ok bool)) {
	f.mu.Lock()
	f.calls = append(f.calls, confirmCall{end, done})
	f.mu.Unlock()
	f.added <- struct{}{}
}

// next waits for the next WaitConfirmed.
func (f *fakeConfirmer) next(t *testing.T) confirmCall {
	t.Helper()
	select {
	case <-f.added:
	case <-time.After(wait):
		t.Fatal("no WaitConfirmed")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[len(f.calls)-1]
}

func (f *fakeConfirmer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// sendAsync appends recs and returns the channel of its answer.
func (r *rig) sendAsync(k QueueKey, recs [][]byte) chan Result {
	ch := make(chan Result, 1)
	r.w.Send(&Append{Key: k, Records: recs, Reply: func(res Result) { ch <- res }})
	return ch
}

func answerOf(t *testing.T, ch chan Result) Result {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(wait):
		t.Fatal("send not answered")
		return Result{}
	}
}

func notAnswered(t *testing.T, ch chan Result, d time.Duration) {
	t.Helper()
	select {
	case res := <-ch:
		t.Fatalf("answered before confirmation: %+v", res)
	case <-time.After(d):
	}
}

func promote(t *testing.T, r *rig, epoch int64) {
	t.Helper()
	ch := make(chan error, 1)
	r.w.Send(&Promote{Epoch: epoch, Done: func(err error) { ch <- err }})
	select {
	case err := <-ch:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal("promote not answered")
	}
}

func masterAt(epoch int64, sss ...int64) role.State {
	return role.State{Kind: role.Master, ReplicaID: 1, Epoch: epoch, SyncStateSet: sss}
}

// TestConfirmedAnswers: a stored send is answered only once its batch end
// is confirmed; done(false) and the deadline answer ErrNotConfirmed.
func TestConfirmedAnswers(t *testing.T) {
	r := newRig(t)
	fc := newFakeConfirmer()
	h := role.NewHolder(masterAt(1, 1, 2))
	r.start(t, Options{Role: h, Confirmer: fc, ConfirmTimeout: 300 * time.Millisecond})
	k := QueueKey{"T", 0}
	promote(t, r, 1)

	ch := r.sendAsync(k, records(t, k, 1))
	c := fc.next(t)
	if c.end != r.st.CommitLog.MaxOffset() {
		t.Fatalf("WaitConfirmed end %d, want the log end %d", c.end, r.st.CommitLog.MaxOffset())
	}
	notAnswered(t, ch, 50*time.Millisecond)
	c.done(true)
	if res := answerOf(t, ch); res.Err != nil || res.QueueOffset != 0 {
		t.Fatalf("confirmed send: %+v", res)
	}

	ch = r.sendAsync(k, records(t, k, 1))
	fc.next(t).done(false)
	if res := answerOf(t, ch); !errors.Is(res.Err, ErrNotConfirmed) {
		t.Fatalf("done(false): %v, want ErrNotConfirmed", res.Err)
	}

	ch = r.sendAsync(k, records(t, k, 1))
	late := fc.next(t)
	began := time.Now()
	if res := answerOf(t, ch); !errors.Is(res.Err, ErrNotConfirmed) {
		t.Fatalf("no confirmation: %v, want ErrNotConfirmed", res.Err)
	}
	if d := time.Since(began); d < 200*time.Millisecond {
		t.Fatalf("answered after %s, before the 300ms deadline", d)
	}
	late.done(true) // a late confirmation reaches no one twice
	time.Sleep(20 * time.Millisecond)
}

// TestConfirmOnePerBatch: one WaitConfirmed per batch, and confirming a
// later batch answers the earlier ones too.
func TestConfirmOnePerBatch(t *testing.T) {
	r := newRig(t)
	fc := newFakeConfirmer()
	in := NewInbox()
	h := role.NewHolder(masterAt(3, 1))
	r.start(t, Options{Role: h, Confirmer: fc, Inbox: in})
	promote(t, r, 3)
	k := QueueKey{"B", 1}
	const n = 200
	chans := make([]chan Result, n)
	for i := range chans {
		ch := make(chan Result, 1)
		chans[i] = ch
		in.Push(&Append{Key: k, Records: records(t, k, 1), Reply: func(res Result) { ch <- res }})
	}
	// Wait until the writer has asked for the batch holding the last send
	// (no new WaitConfirmed for a while, and the log holds all n).
	deadline := time.Now().Add(wait)
	var last confirmCall
	for {
		last = fc.next(t)
		quiet := false
		select {
		case <-fc.added:
			fc.added <- struct{}{} // keep it for next
		case <-time.After(100 * time.Millisecond):
			quiet = true
		}
		if quiet && len(storedQueueOffsets(t, r.st)[k]) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the last batch was never asked for")
		}
	}
	if c := fc.count(); c >= n {
		t.Fatalf("%d WaitConfirmed for %d sends: not batched", c, n)
	}
	last.done(true)
	seen := map[int64]bool{}
	for _, ch := range chans {
		res := answerOf(t, ch)
		if res.Err != nil || seen[res.QueueOffset] {
			t.Fatalf("send: %+v (dup %v)", res, seen[res.QueueOffset])
		}
		seen[res.QueueOffset] = true
	}
	t.Logf("%d sends, %d WaitConfirmed", n, fc.count())
}

// TestRefusals: a replica, a fenced master, a master not promoted yet and
// one with too few in-sync replicas append nothing.
func TestRefusals(t *testing.T) {
	r := newRig(t)
	fc := newFakeConfirmer()
	h := role.NewHolder(masterAt(1, 1, 2))
	r.start(t, Options{Role: h, Confirmer: fc, MinInSync: 2})
	k := QueueKey{"R", 0}
	check := func(want error) {
		t.Helper()
		before := r.st.CommitLog.MaxOffset()
		if res := r.send(t, k, records(t, k, 1)); !errors.Is(res.Err, want) {
			t.Fatalf("send: %v, want %v", res.Err, want)
		}
		if after := r.st.CommitLog.MaxOffset(); after != before {
			t.Fatalf("refused send appended: log end %d -> %d", before, after)
		}
	}
	check(ErrNotMaster) // not promoted at epoch 1 yet
	promote(t, r, 1)
	h.Set(role.State{Kind: role.Replica, BrokerID: 2, ReplicaID: 2, Epoch: 2, MasterAddr: "x:1"})
	check(ErrNotMaster)
	fenced := masterAt(1, 1, 2)
	fenced.Fenced = true
	h.Set(fenced)
	check(ErrFenced)
	h.Set(masterAt(1, 1))
	check(ErrInSyncReplicas)
	h.Set(masterAt(2, 1, 2))
	check(ErrNotMaster) // a new epoch needs a new promotion
	promote(t, r, 2)
	ch := r.sendAsync(k, records(t, k, 1))
	fc.next(t).done(true)
	if res := answerOf(t, ch); res.Err != nil {
		t.Fatal(res.Err)
	}
}

// TestPromoteRebuildsQueueOffsets: records another writer put in the log
// (a replica's received bytes) are counted: the promoted writer hands out
// no queue offset twice.
func TestPromoteRebuildsQueueOffsets(t *testing.T) {
	r := newRig(t)
	h := role.NewHolder(role.State{Kind: role.Replica, BrokerID: 2, ReplicaID: 2, Epoch: 1})
	r.start(t, Options{Role: h})
	k := QueueKey{"P", 0}
	if res := r.send(t, k, records(t, k, 1)); !errors.Is(res.Err, ErrNotMaster) {
		t.Fatalf("replica took a send: %v", res.Err)
	}
	// The "receiver": records written by the old master, offsets 0..4.
	recs := records(t, k, 5)
	for i, rec := range recs {
		message.SetQueueOffset(rec, int64(i))
	}
	if _, err := r.st.CommitLog.Append(recs); err != nil {
		t.Fatal(err)
	}
	h.Set(masterAt(2, 2))
	promote(t, r, 2)
	res := r.send(t, k, records(t, k, 2))
	if res.Err != nil || res.QueueOffset != 5 {
		t.Fatalf("after promotion: %+v, want queue offset 5", res)
	}
	got := storedQueueOffsets(t, r.st)[k]
	for i, qo := range got {
		if qo != int64(i) {
			t.Fatalf("queue offsets %v: not 0..%d without duplicates", got, len(got)-1)
		}
	}
}

// TestWrittenBeforeSyncFlush: under sync flush with a Confirmer, Written
// runs after the batch is in the CommitLog and before its fsync (the
// replicas can receive it while the master fsyncs); Appended follows the
// fsync; the send is still answered only once confirmed.
func TestWrittenBeforeSyncFlush(t *testing.T) {
	r := newRig(t)
	fc := newFakeConfirmer()
	h := role.NewHolder(masterAt(1, 1, 2))
	var mu sync.Mutex
	var events []string
	var atWritten [2]int64 // log end and flushed offset when Written ran
	r.start(t, Options{Role: h, Confirmer: fc, Mode: FlushSync,
		Written: func() {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, "written")
			atWritten = [2]int64{r.st.CommitLog.MaxOffset(), r.st.CommitLog.FlushedOffset()}
		},
		OnSync: func() {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, "sync")
		},
		Appended: func() {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, "appended")
		}})
	k := QueueKey{"W", 0}
	promote(t, r, 1)
	mu.Lock()
	events = nil
	mu.Unlock()

	ch := r.sendAsync(k, records(t, k, 1))
	c := fc.next(t)
	notAnswered(t, ch, 20*time.Millisecond)
	mu.Lock()
	got, at := append([]string(nil), events...), atWritten
	mu.Unlock()
	if len(got) < 3 || got[0] != "written" || got[1] != "sync" || got[2] != "appended" {
		t.Fatalf("hooks ran as %v, want written, sync, appended", got)
	}
	if at[0] != c.end || at[1] >= at[0] {
		t.Fatalf("at Written: log end %d, flushed %d; want the batch's end %d written and not yet flushed", at[0], at[1], c.end)
	}
	c.done(true)
	if res := answerOf(t, ch); res.Err != nil {
		t.Fatalf("confirmed send: %+v", res)
	}
}
