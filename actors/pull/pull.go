// Package pull is the pull stage: it answers PULL_MESSAGE from the consume
// queues and the CommitLog, parks long polls until a message arrives or their
// suspend timeout passes, and searches offsets by time.
//
// A pull reads consume-queue units from the requested offset, keeps those
// whose tag hash passes the subscription's filter, and answers with the raw
// stored records concatenated back to back (RocketMQ's pull body). A SQL92
// subscription (CompileFilter, compiled once per expression and version by
// a FilterCache) is evaluated against each scanned record's properties,
// read in place from the CommitLog. Status
// codes and nextBeginOffset follow RocketMQ's store (see docs/protocol.md):
//
//	queue empty                 -> PULL_NOT_FOUND (19), or OFFSET_MOVED (21) if offset != 0
//	offset < min                -> OFFSET_MOVED (21), next = min
//	offset == max               -> PULL_NOT_FOUND (19), next = offset (long-poll parks here)
//	offset > max                -> OFFSET_MOVED (21), next = max
//	nothing matched the filter  -> PULL_RETRY_IMMEDIATELY (20), next past the scanned units
//	found                       -> SUCCESS (0), next after the last unit returned
//
// The stage is the single owner of the parked-pull table and of where each
// group pulls next (reported by GET_CONSUME_STATS); the dispatcher wakes it
// with Arrived messages. File reads for requests happen here, never on a
// network event loop: pulls, send-back and cancel look-ups, and the store
// times and offset searches of the admin requests (admin.go).
package pull

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
)

// StageName is the pull stage's stable name.
const StageName = "pull"

// Pull flag bits (PullSysFlag).
const (
	FlagCommitOffset int32 = 1 << 0
	FlagSuspend      int32 = 1 << 1
	FlagSubscription int32 = 1 << 2
)

// Request is one PULL_MESSAGE, already validated by the broker.
type Request struct {
	Cmd          *remoting.Command
	Group        string
	Topic        string
	QueueID      int32
	Offset       int64
	MaxNums      int32
	SysFlag      int32
	Filter       Filter
	SuspendUntil time.Time
	// Reply sends the response; called from the stage goroutine, non-blocking.
	Reply func(*remoting.Command)
}

// Fail implements stage.Failable: the pull is answered with SYSTEM_ERROR.
func (r *Request) Fail(err error) {
	r.Reply(remoting.NewResponse(r.Cmd, remoting.SystemError, err.Error()))
}

// ReadAt reads the stored record at a CommitLog offset for a request that
// needs one (CONSUMER_SEND_MSG_BACK, the admin timer cancel). Reply runs on
// the pull stage, which owns reads for requests: it must not block.
type ReadAt struct {
	Offset int64
	Reply  func(record []byte, err error)
}

// Fail implements stage.Failable.
func (r *ReadAt) Fail(err error) { r.Reply(nil, err) }

// Arrived wakes pulls parked on the given queues.
type Arrived struct{ Queues []dispatch.Arrival }

// SearchByTime answers SEARCH_OFFSET_BY_TIMESTAMP.
type SearchByTime struct {
	Topic     string
	QueueID   int32
	Timestamp int64
	Reply     func(offset int64)
	stage.FailFunc
}

type expireTick struct{}

// Options configures the pull stage.
type Options struct {
	Store *storage.Store
	// MaxBytes caps one pull response body (default 4 MiB; at least one
	// message is always returned).
	MaxBytes int
	// Served, when set, is told of every pull answered (statistics): the
	// group, the topic and how many messages it carried (0: none).
	Served func(group, topic string, msgs int)
	// Parked, when set, counts the parked pulls for the dispatcher's side,
	// which sends Arrived only while it is above zero (it outlives
	// restarts of the stage). A pull parks, then looks at its queue again:
	// with the dispatcher growing the queue before it reads Parked, one of
	// the two always sees the other.
	Parked *atomic.Int64
	Logger zerolog.Logger
}

type queueKey struct {
	topic   string
	queueID int32
}

// Puller is the actor.
type Puller struct {
	opts   Options
	parked map[queueKey][]*Request
	pulled map[pulledKey]int64 // next offset each group pulls, per queue
	timer  *stage.Timer

	// Scratch reused from pull to pull (scanUnits).
	units    []consumequeue.Unit
	picked   []consumequeue.Unit
	pickedAt []int64
}

// Producer returns the actor producer.
func Producer(opts Options) stage.Producer {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 4 << 20
	}
	return func(self *stage.Stage) actor.Actor { return &Puller{opts: opts, timer: self.NewTimer()} }
}

// Receive implements actor.Actor.
func (p *Puller) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.parked = map[queueKey][]*Request{}
		p.unparked(-1)
		p.pulled = map[pulledKey]int64{}
		p.arm()
	case *Request:
		p.serve(m, true)
	case *Arrived:
		for _, a := range m.Queues {
			p.wake(queueKey{a.Topic, a.QueueID})
		}
	case expireTick:
		p.expire(time.Now())
		p.arm()
	case *SearchByTime:
		m.Reply(p.searchByTime(m))
	case *ReadAt:
		rec, _, err := p.opts.Store.CommitLog.Read(m.Offset)
		m.Reply(rec, err)
	case *StoreTimes:
		p.storeTimes(m)
	case *SearchQueues:
		p.searchQueues(m)
	case *actor.Stopping, *actor.Restarting:
		p.timer.Stop()
		p.answerAll()
	}
}

func (p *Puller) arm() {
	p.timer.Arm(200*time.Millisecond, expireTick{})
}

// serve answers r, or parks it when allowed and nothing is there yet.
func (p *Puller) serve(r *Request, mayPark bool) {
	var before int64 = -1
	if q := p.opts.Store.Queues.Lookup(r.Topic, r.QueueID); q != nil {
		before = q.MaxOffset()
	}
	resp, found := p.read(r)
	if !found && mayPark && r.SysFlag&FlagSuspend != 0 && time.Now().Before(r.SuspendUntil) &&
		resp.Code == remoting.PullNotFound {
		k := queueKey{r.Topic, r.QueueID}
		p.parked[k] = append(p.parked[k], r)
		if p.opts.Parked != nil {
			p.opts.Parked.Add(1)
			// The queue may have grown while Parked was 0 (no Arrived).
			if q := p.opts.Store.Queues.Lookup(r.Topic, r.QueueID); q != nil && q.MaxOffset() != before {
				p.wake(k)
			}
		}
		return
	}
	p.count(r, resp, found)
	r.Reply(resp)
}

// unparked takes n pulls off the Parked count (n < 0: resets it).
func (p *Puller) unparked(n int) {
	switch {
	case p.opts.Parked == nil:
	case n < 0:
		p.opts.Parked.Store(0)
	case n > 0:
		p.opts.Parked.Add(-int64(n))
	}
}

func (p *Puller) wake(k queueKey) {
	reqs := p.parked[k]
	if len(reqs) == 0 {
		return
	}
	delete(p.parked, k)
	p.unparked(len(reqs))
	for _, r := range reqs {
		p.serve(r, true)
	}
}

// expire answers parked pulls whose suspension ended before now.
func (p *Puller) expire(now time.Time) {
	for k, reqs := range p.parked {
		kept := reqs[:0]
		for _, r := range reqs {
			if now.Before(r.SuspendUntil) {
				kept = append(kept, r)
				continue
			}
			p.unparked(1)
			p.serve(r, false)
		}
		if len(kept) == 0 {
			delete(p.parked, k)
		} else {
			p.parked[k] = kept
		}
	}
}

// answerAll answers every parked pull, whatever its suspend timeout (on
// stop or restart: a new instance starts with an empty table).
func (p *Puller) answerAll() {
	for k, reqs := range p.parked {
		delete(p.parked, k)
		p.unparked(len(reqs))
		for _, r := range reqs {
			p.serve(r, false)
		}
	}
}

// ParkedCount is the number of parked pulls (for tests and metrics).
func (p *Puller) ParkedCount() int {
	n := 0
	for _, r := range p.parked {
		n += len(r)
	}
	return n
}

// count records an answered pull: the group's next offset and the
// statistics.
func (p *Puller) count(r *Request, resp *remoting.Command, found bool) {
	msgs := 0
	if found {
		if next, err := strconv.ParseInt(resp.Field("nextBeginOffset"), 10, 64); err == nil {
			p.pulled[pulledKey{r.Group, r.Topic, r.QueueID}] = next
		}
		for b := resp.Body; len(b) >= 4; msgs++ { // records back to back, each led by its size
			size := int(message.PeekTotalSize(b))
			if size <= 0 || size > len(b) {
				break
			}
			b = b[size:]
		}
	}
	if p.opts.Served != nil {
		p.opts.Served(r.Group, r.Topic, msgs)
	}
}

func setOffsets(resp *remoting.Command, next, min, max int64) {
	resp.SetField("nextBeginOffset", strconv.FormatInt(next, 10))
	resp.SetField("minOffset", strconv.FormatInt(min, 10))
	resp.SetField("maxOffset", strconv.FormatInt(max, 10))
	resp.SetField("suggestWhichBrokerId", "0")
}
