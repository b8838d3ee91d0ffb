package pull

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
)

const wait = 5 * time.Second

// rig is a real store plus a pull stage.
type rig struct {
	dir     string
	sopts   storage.Options
	st      *storage.Store
	sys     *actor.ActorSystem
	metrics *stage.Registry
	svc     *Service
	p       *stage.Stage // the pull stage of svc
	parked  atomic.Int64 // the stage's Parked count
}

func newRig(t *testing.T, sopts storage.Options) *rig {
	t.Helper()
	r := &rig{dir: t.TempDir(), sopts: sopts, sys: stage.NewSystem(zerolog.Nop())}
	r.metrics = stage.NewRegistry(prometheus.NewRegistry())
	r.open(t)
	t.Cleanup(func() {
		r.stop()
		r.sys.Shutdown()
		_ = r.st.Close()
	})
	return r
}

func (r *rig) open(t *testing.T) {
	t.Helper()
	st, err := storage.Open(r.dir, r.sopts)
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
}

func (r *rig) start(t *testing.T, maxBytes int) {
	t.Helper()
	r.startWith(t, Options{MaxBytes: maxBytes})
}

// startWith starts the pull stages with opts (Store and Parked filled in;
// two readers unless opts says otherwise).
func (r *rig) startWith(t *testing.T, opts Options) {
	t.Helper()
	opts.Store, opts.Parked = r.st, &r.parked
	svc, err := Start(r.sys, r.metrics, supervisor.New(supervisor.Policy{}), opts)
	if err != nil {
		t.Fatal(err)
	}
	r.svc, r.p = svc, svc.Stage(StageName)
}

// stop stops the pull stages, if they run.
func (r *rig) stop() {
	if r.svc != nil {
		r.svc.Stop()
		r.svc, r.p = nil, nil
	}
}

// put stores one message (CommitLog record plus consume-queue unit, as the
// writer and dispatcher would) and returns the stored bytes.
func (r *rig) put(t *testing.T, topic string, queue int32, tags string, storeTS int64) []byte {
	t.Helper()
	q, err := r.st.Queues.Queue(topic, queue)
	if err != nil {
		t.Fatal(err)
	}
	rec := &message.Record{QueueID: queue, Topic: topic, QueueOffset: q.MaxOffset(), StoreTimestamp: storeTS,
		Body:       []byte("body-" + strconv.FormatInt(q.MaxOffset(), 10)),
		Properties: message.EncodeProperties(map[string]string{message.PropTags: tags})}
	b, err := rec.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := r.st.CommitLog.Append([][]byte{b})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Append(consumequeue.Unit{Offset: offs[0], Size: int32(len(b)), TagsCode: message.TagsHashCode(tags)}); err != nil {
		t.Fatal(err)
	}
	return b
}

// request builds a pull; the caller may adjust fields before sending.
func request(topic string, queue int32, offset int64, maxNums int32, filter string) *Request {
	return &Request{Group: "G", Topic: topic, QueueID: queue, Offset: offset, MaxNums: maxNums,
		Filter: ParseFilter(filter)}
}

// send sends req and returns the channel its answer arrives on.
func (r *rig) send(req *Request) <-chan Result {
	ch := make(chan Result, 1)
	req.Reply = func(c Result) { ch <- c }
	r.p.Send(req)
	return ch
}

func (r *rig) pull(t *testing.T, req *Request) Result {
	t.Helper()
	return await(t, r.send(req))
}

func await(t *testing.T, ch <-chan Result) Result {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(wait):
		t.Fatal("pull not answered")
		return Result{}
	}
}

// barrier returns once the pull stage and its readers have processed
// everything sent before it (and the pull stage what the readers sent it
// meanwhile: pulls to park).
func (r *rig) barrier(t *testing.T) {
	t.Helper()
	done := make(chan struct{}, 1)
	r.p.Send(&syncReq{done: func() { done <- struct{}{} }})
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("stage does not answer")
	}
}

func notAnswered(t *testing.T, ch <-chan Result, when string) {
	t.Helper()
	select {
	case c := <-ch:
		t.Fatalf("%s: parked pull answered with code %d (%s)", when, c.Outcome, c.Remark)
	default:
	}
}

type want struct {
	code           Outcome
	remark         string
	next, min, max int64
	body           []byte
}

func check(t *testing.T, name string, req *Request, got Result, w want) {
	t.Helper()
	if got.Outcome != w.code || got.Remark != w.remark {
		t.Errorf("%s: code %d %q, want %d %q", name, got.Outcome, got.Remark, w.code, w.remark)
	}
	if !got.HasOffsets() || got.Next != w.next || got.Min != w.min || got.Max != w.max {
		t.Errorf("%s: offsets %v next %d min %d max %d, want %d %d %d", name, got.HasOffsets(), got.Next, got.Min, got.Max, w.next, w.min, w.max)
	}
	if n := records(got.Body); got.Messages != n {
		t.Errorf("%s: %d messages counted, the body holds %d", name, got.Messages, n)
	}
	if !bytes.Equal(got.Body, w.body) {
		t.Errorf("%s: body of %d bytes, want %d bytes", name, len(got.Body), len(w.body))
	}
}

func cat(recs ...[]byte) []byte { return bytes.Join(recs, nil) }

// records counts the records back to back in body.
func records(body []byte) int {
	n := 0
	for len(body) >= 4 {
		size := int(message.PeekTotalSize(body))
		if size <= 0 || size > len(body) {
			break
		}
		body, n = body[size:], n+1
	}
	return n
}

func TestPullStatus(t *testing.T) {
	r := newRig(t, storage.Options{})
	var recs [][]byte
	for i, tag := range []string{"TagA", "TagB", "TagA", "TagB", "TagA"} {
		recs = append(recs, r.put(t, "T", 0, tag, int64(i)))
	}
	if _, err := r.st.Queues.Queue("Z", 0); err != nil { // exists, no units
		t.Fatal(err)
	}
	r.start(t, 0)
	const (
		ok      = Found
		nf      = NoNewMessage
		moved   = OffsetMoved
		noMsg   = "NO_MESSAGE_IN_QUEUE"
		overOne = "OFFSET_OVERFLOW_ONE"
	)
	tests := []struct {
		name    string
		topic   string
		offset  int64
		maxNums int32
		filter  string
		want    want
	}{
		{"unknown queue, offset 0", "E", 0, 32, "*", want{nf, noMsg, 0, 0, 0, nil}},
		{"unknown queue, offset 3", "E", 3, 32, "*", want{moved, noMsg, 0, 0, 0, nil}},
		{"empty queue, offset 0", "Z", 0, 32, "*", want{nf, noMsg, 0, 0, 0, nil}},
		{"offset == max", "T", 5, 32, "*", want{nf, overOne, 5, 0, 5, nil}},
		{"offset > max", "T", 9, 32, "*", want{moved, "OFFSET_OVERFLOW_BADLY", 5, 0, 5, nil}},
		{"offset < min", "T", -1, 32, "*", want{moved, "OFFSET_TOO_SMALL", 0, 0, 5, nil}},
		{"found all", "T", 0, 32, "*", want{ok, "FOUND", 5, 0, 5, cat(recs...)}},
		{"found up to maxNums", "T", 1, 2, "", want{ok, "FOUND", 3, 0, 5, cat(recs[1], recs[2])}},
		{"maxNums 0 means 32", "T", 3, 0, "*", want{ok, "FOUND", 5, 0, 5, cat(recs[3], recs[4])}},
		{"filter TagA", "T", 1, 32, "TagA", want{ok, "FOUND", 5, 0, 5, cat(recs[2], recs[4])}},
		{"filter TagB, one", "T", 0, 1, "TagB", want{ok, "FOUND", 2, 0, 5, recs[1]}},
		{"filter both", "T", 1, 32, "TagA || TagB", want{ok, "FOUND", 5, 0, 5, cat(recs[1:]...)}},
		{"filtered out to the end", "T", 0, 32, "TagC", want{nf, overOne, 5, 0, 5, nil}},
		{"last unit filtered out", "T", 3, 32, "TagB", want{ok, "FOUND", 5, 0, 5, recs[3]}},
	}
	for _, tt := range tests {
		req := request(tt.topic, 0, tt.offset, tt.maxNums, tt.filter)
		check(t, tt.name, req, r.pull(t, req), tt.want)
	}
}

func TestPullBelowMinOffset(t *testing.T) {
	r := newRig(t, storage.Options{UnitsPerFile: 2})
	var recs [][]byte
	for i := 0; i < 6; i++ {
		recs = append(recs, r.put(t, "T", 0, "", 0))
	}
	// Drop the first consume-queue file, as retention would.
	if err := r.st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(r.dir, "consumequeue", "T", "0", "00000000000000000000")); err != nil {
		t.Fatal(err)
	}
	r.open(t)
	r.start(t, 0)
	req := request("T", 0, 1, 32, "*")
	check(t, "offset 1 < min 2", req, r.pull(t, req), want{OffsetMoved, "OFFSET_TOO_SMALL", 2, 2, 6, nil})
	req = request("T", 0, 2, 32, "*")
	check(t, "offset == min", req, r.pull(t, req), want{Found, "FOUND", 6, 2, 6, cat(recs[2:]...)})
}

func TestPullScanLimitRetriesImmediately(t *testing.T) {
	r := newRig(t, storage.Options{})
	q, err := r.st.Queues.Queue("T", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Filtered-out units are never read from the CommitLog: fake positions.
	n := maxScanUnits + 5
	filler := make([]consumequeue.Unit, n)
	for i := range filler {
		filler[i] = consumequeue.Unit{Offset: int64(i + 1), Size: 1, TagsCode: message.TagsHashCode("TagA")}
	}
	if err := q.Append(filler...); err != nil {
		t.Fatal(err)
	}
	// A real TagB message, placed in the CommitLog after the fake positions.
	pad := &message.Record{Topic: "pad", Body: make([]byte, n+10)}
	if _, err := r.st.CommitLog.Append([][]byte{pad.AppendTo(nil)}); err != nil {
		t.Fatal(err)
	}
	b := (&message.Record{Topic: "T", QueueOffset: int64(n), Body: []byte("b"),
		Properties: message.EncodeProperties(map[string]string{message.PropTags: "TagB"})}).AppendTo(nil)
	offs, err := r.st.CommitLog.Append([][]byte{b})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Append(consumequeue.Unit{Offset: offs[0], Size: int32(len(b)), TagsCode: message.TagsHashCode("TagB")}); err != nil {
		t.Fatal(err)
	}
	r.start(t, 0)
	max := int64(n + 1)
	req := request("T", 0, 0, 32, "TagB")
	check(t, "scan limit", req, r.pull(t, req),
		want{RetryImmediately, "NO_MATCHED_MESSAGE", maxScanUnits, 0, max, nil})
	req = request("T", 0, maxScanUnits, 32, "TagB")
	check(t, "after the scan limit", req, r.pull(t, req), want{Found, "FOUND", max, 0, max, b})
}

func TestPullMaxBytes(t *testing.T) {
	r := newRig(t, storage.Options{})
	var recs [][]byte
	for i := 0; i < 4; i++ {
		recs = append(recs, r.put(t, "T", 0, "", 0))
	}
	r.start(t, 2*len(recs[0])+len(recs[0])/2)
	req := request("T", 0, 0, 32, "*")
	check(t, "two fit", req, r.pull(t, req), want{Found, "FOUND", 2, 0, 4, cat(recs[0], recs[1])})
	r.stop()
	r.start(t, 1)
	req = request("T", 0, 1, 32, "*")
	check(t, "at least one", req, r.pull(t, req), want{Found, "FOUND", 2, 0, 4, recs[1]})
}

func TestSuspendedPullWokenByArrival(t *testing.T) {
	r := newRig(t, storage.Options{})
	r.put(t, "T", 0, "TagA", 0)
	r.start(t, 0)
	req := request("T", 0, 1, 32, "TagA")
	req.SysFlag = FlagSuspend | FlagCommitOffset
	req.SuspendUntil = time.Now().Add(time.Minute)
	ch := r.send(req)
	r.barrier(t)
	notAnswered(t, ch, "after parking")

	// Another queue's arrival does not wake it.
	r.put(t, "T", 1, "TagA", 0)
	r.p.Send(&Arrived{Queues: []dispatch.Arrival{{Topic: "T", QueueID: 1, MaxOffset: 1}}})
	r.barrier(t)
	notAnswered(t, ch, "after an arrival on T/1")

	// A message its filter rejects wakes it, and it parks again.
	r.put(t, "T", 0, "TagB", 0)
	r.p.Send(&Arrived{Queues: []dispatch.Arrival{{Topic: "T", QueueID: 0, MaxOffset: 2}}})
	r.barrier(t)
	notAnswered(t, ch, "after a filtered-out arrival")

	want3 := r.put(t, "T", 0, "TagA", 0)
	r.p.Send(&Arrived{Queues: []dispatch.Arrival{{Topic: "T", QueueID: 0, MaxOffset: 3}}})
	check(t, "woken", req, await(t, ch), want{Found, "FOUND", 3, 0, 3, want3})
}

// TestParkedCount follows the count the dispatcher side reads before it
// sends Arrived: up on parking, down on every way out of the table.
func TestParkedCount(t *testing.T) {
	r := newRig(t, storage.Options{})
	r.start(t, 0)
	park := func(offset int64) <-chan Result {
		req := request("T", 0, offset, 32, "*")
		req.SysFlag = FlagSuspend
		req.SuspendUntil = time.Now().Add(time.Minute)
		return r.send(req)
	}
	a, b := park(0), park(0)
	r.barrier(t)
	if n := r.parked.Load(); n != 2 {
		t.Fatalf("parked count %d with two parked pulls", n)
	}
	r.put(t, "T", 0, "", 0)
	r.p.Send(&Arrived{Queues: []dispatch.Arrival{{Topic: "T", QueueID: 0, MaxOffset: 1}}})
	await(t, a)
	await(t, b)
	r.barrier(t)
	if n := r.parked.Load(); n != 0 {
		t.Fatalf("parked count %d after both were answered", n)
	}
	c := park(1)
	r.barrier(t)
	notAnswered(t, c, "parked at the end")
	if n := r.parked.Load(); n != 1 {
		t.Fatalf("parked count %d", n)
	}
	r.stop()
	await(t, c)
	if n := r.parked.Load(); n != 0 {
		t.Fatalf("parked count %d after stop", n)
	}
}

func TestSuspendedPullExpires(t *testing.T) {
	r := newRig(t, storage.Options{})
	r.put(t, "T", 0, "", 0)
	r.start(t, 0)
	req := request("T", 0, 1, 32, "*")
	req.SysFlag = FlagSuspend
	req.SuspendUntil = time.Now().Add(150 * time.Millisecond)
	ch := r.send(req)
	got := await(t, ch)
	if now := time.Now(); now.Before(req.SuspendUntil) {
		t.Errorf("answered %s before SuspendUntil", req.SuspendUntil.Sub(now))
	}
	check(t, "expired", req, got, want{NoNewMessage, "OFFSET_OVERFLOW_ONE", 1, 0, 1, nil})
}

func TestPullNotParked(t *testing.T) {
	r := newRig(t, storage.Options{})
	r.put(t, "T", 0, "", 0)
	r.start(t, 0)
	tests := []struct {
		name    string
		offset  int64
		flag    int32
		until   time.Duration
		code    Outcome
		nextOff int64
	}{
		{"no suspend flag", 1, 0, time.Minute, NoNewMessage, 1},
		{"suspend already over", 1, FlagSuspend, -time.Second, NoNewMessage, 1},
		{"offset moved is never parked", 7, FlagSuspend, time.Minute, OffsetMoved, 1},
	}
	for _, tt := range tests {
		req := request("T", 0, tt.offset, 32, "*")
		req.SysFlag = tt.flag
		req.SuspendUntil = time.Now().Add(tt.until)
		ch := r.send(req)
		r.barrier(t)
		select {
		case got := <-ch:
			if got.Outcome != tt.code || got.Next != tt.nextOff {
				t.Errorf("%s: code %d next %d, want %d %d", tt.name, got.Outcome, got.Next,
					tt.code, tt.nextOff)
			}
		default:
			t.Errorf("%s: pull was parked", tt.name)
		}
	}
}

func TestStopAnswersParkedPulls(t *testing.T) {
	r := newRig(t, storage.Options{})
	r.start(t, 0)
	req := request("T", 0, 0, 32, "*")
	req.SysFlag = FlagSuspend
	req.SuspendUntil = time.Now().Add(2 * time.Hour) // the client chooses the timeout
	ch := r.send(req)
	r.barrier(t)
	notAnswered(t, ch, "before stop")
	r.stop()
	if got := await(t, ch); got.Outcome != NoNewMessage {
		t.Errorf("parked pull answered on stop with %d, want %d", got.Outcome, NoNewMessage)
	}
}

func TestSearchByTime(t *testing.T) {
	r := newRig(t, storage.Options{})
	for _, ts := range []int64{1000, 2000, 2000, 3000, 4000} {
		r.put(t, "T", 0, "", ts)
	}
	r.start(t, 0)
	tests := []struct {
		topic string
		ts    int64
		want  int64
	}{
		{"T", 0, 0}, {"T", 1000, 0}, {"T", 1500, 1}, {"T", 2000, 1}, {"T", 2001, 3},
		{"T", 4000, 4}, {"T", 4001, 5}, {"missing", 1000, 0},
	}
	for _, tt := range tests {
		ch := make(chan int64, 1)
		r.p.Send(&SearchByTime{Topic: tt.topic, QueueID: 0, Timestamp: tt.ts, Reply: func(o int64) { ch <- o }})
		select {
		case got := <-ch:
			if got != tt.want {
				t.Errorf("SearchByTime(%s, %d) = %d, want %d", tt.topic, tt.ts, got, tt.want)
			}
		case <-time.After(wait):
			t.Fatal("SearchByTime not answered")
		}
	}
}
