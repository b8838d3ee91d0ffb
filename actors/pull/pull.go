// Package pull is the pull side of the broker: it answers PULL_MESSAGE from
// the consume queues and the CommitLog, parks long polls until a message
// arrives or their suspend timeout passes, and searches offsets by time.
//
// It runs as several supervised stages (Start): the pull stage receives
// every request, owns the parked-pull table and hands the reads to the
// pull_read_<i> stages (Options.Readers, --pull-workers), one at a time to
// whichever reader is free; what finds none free waits, in order, in the
// pull stage's backlog. One consumer's slow disk read thus holds only the
// reader it runs on. A reader that finds nothing for a long poll hands it
// back to the pull stage, which parks it; a wake or a timeout sends it to
// a reader again.
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
// Bounds: a connection parks at most Options.MaxParkedPerConn long polls
// (past it a long poll gets the PULL_NOT_FOUND answer at once, as a pull
// that does not suspend), and a request whose connection cannot take more
// answers (Request.Busy) is answered SYSTEM_BUSY without a read.
//
// The pull stage is the single owner of the parked-pull table; where each
// group pulls next (reported by GET_CONSUME_STATS) is kept in atomics the
// readers update. The dispatcher wakes the pull stage with Arrived
// messages. File reads for requests happen on the readers, never on a
// network event loop: pulls, send-back and cancel look-ups, and the store
// times and offset searches of the admin requests (admin.go).
package pull

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage"
)

// StageName is the pull stage's stable name.
const StageName = "pull"

// Pull flag bits (PullSysFlag).
const (
	FlagCommitOffset int32 = 1 << 0
	FlagSuspend      int32 = 1 << 1
	FlagSubscription int32 = 1 << 2
	// FlagLitePull marks a LITE_PULL_MESSAGE (DefaultLitePullConsumer): it
	// posts its subscription with every pull and keeps its own offsets
	// (committed with UPDATE_CONSUMER_OFFSET, never piggybacked), so it is
	// served exactly as PULL_MESSAGE is.
	FlagLitePull int32 = 1 << 4
)

// Request is one PULL_MESSAGE, already validated by the broker API.
type Request struct {
	Group        string
	Topic        string
	QueueID      int32
	Offset       int64
	MaxNums      int32
	SysFlag      int32
	Filter       Filter
	SuspendUntil time.Time
	// ConnID names the client's connection, for the bound on parked long
	// polls per connection.
	ConnID uint64
	// Busy, when set, returns the remark of a SYSTEM_BUSY answer while the
	// client's connection cannot take more answers (it does not read what
	// it was sent), "" otherwise. A reader asks it before reading.
	Busy func() string
	// Reply takes the answer; called from a pull stage's goroutine, it
	// must not block.
	Reply func(Result)

	// mayPark lets a reader hand the request back to the pull stage to be
	// parked; the pull stage sets it before each hand-off (the request has
	// one owner at a time: the pull stage, then the reader).
	mayPark bool
}

// Fail implements stage.Failable: the pull is answered Failed.
func (r *Request) Fail(err error) {
	r.Reply(Result{Outcome: Failed, Remark: err.Error()})
}

// ReadAt reads the stored record at a CommitLog offset for a request that
// needs one (CONSUMER_SEND_MSG_BACK, the admin timer cancel). Reply runs on
// a pull reader, which owns reads for requests: it must not block.
type ReadAt struct {
	Offset int64
	Reply  func(record []byte, err error)
}

// Fail implements stage.Failable.
func (r *ReadAt) Fail(err error) { r.Reply(nil, err) }

// Arrived wakes pulls parked on the given queues.
type Arrived struct{ Queues []dispatch.Arrival }

// Unpark takes the long polls of Group parked on the given queues of Topic
// out of the table and hands each to Each, on the pull stage's goroutine
// (Each must not block): an admin reset of those queues answers them now,
// not when their suspension ends.
type Unpark struct {
	Group  string
	Topic  string
	Queues []int32
	Each   func(*Request)
}

// SearchByTime answers SEARCH_OFFSET_BY_TIMESTAMP.
type SearchByTime struct {
	Topic     string
	QueueID   int32
	Timestamp int64
	Reply     func(offset int64)
	stage.FailFunc
}

type expireTick struct{}

// Defaults and limits of Options.
const (
	// DefaultReaders is the default number of pull_read stages.
	DefaultReaders = 2
	// MaxReaders caps Options.Readers.
	MaxReaders = 8
	// DefaultMaxParkedPerConn is the default bound on the long polls one
	// connection has parked: far above the one per queue a consumer keeps
	// (the Go and Java clients hold one parked pull per queue they own).
	DefaultMaxParkedPerConn = 1024
)

// Options configures the pull stages.
type Options struct {
	Store *storage.Store
	// MaxBytes caps one pull response body (default 4 MiB; at least one
	// message is always returned).
	MaxBytes int
	// Readers is how many pull_read stages read for the pull stage
	// (default DefaultReaders, at most MaxReaders).
	Readers int
	// MaxParkedPerConn bounds the long polls parked per connection
	// (default DefaultMaxParkedPerConn): past it a long poll that finds
	// nothing is answered at once with PULL_NOT_FOUND instead of parked.
	MaxParkedPerConn int
	// MaxParkedLive, when set, returns the bound in force instead (a
	// run-time setting, read for every long poll parked; the pipeline's
	// Settings).
	MaxParkedLive func() int
	// Served, when set, is told of every pull answered (statistics): the
	// group, the topic, how many messages it carried (0: none) and their
	// bytes. It is called from the readers' goroutines.
	Served func(group, topic string, msgs, bytes int)
	// Parked, when set, counts the parked pulls for the dispatcher's side,
	// which sends Arrived only while it is above zero (it outlives
	// restarts of the stage). A pull parks, then looks at its queue again:
	// with the dispatcher growing the queue before it reads Parked, one of
	// the two always sees the other.
	Parked *atomic.Int64
	// ParkRefused, when set, counts the long polls answered at once
	// because their connection had MaxParkedPerConn parked.
	ParkRefused func()
	Logger      zerolog.Logger
}

type queueKey struct {
	topic   string
	queueID int32
}

// Puller is the pull stage's actor: it routes requests to the readers and
// owns the parked long polls.
type Puller struct {
	svc    *Service
	parked map[queueKey][]*Request
	byConn map[uint64]int // parked pulls per connection
	timer  *stage.Timer
	inline reader // answers parked pulls and the backlog on stop
}

// Receive implements actor.Actor.
func (p *Puller) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.parked = map[queueKey][]*Request{}
		p.byConn = map[uint64]int{}
		p.unparked(-1)
		p.arm()
		p.svc.drain() // a backlog kept over a restart
	case readerFree:
		p.svc.kick.Store(false) // before draining: a reader that finishes meanwhile kicks again
		p.svc.drain()
	case *Request:
		m.mayPark = true
		p.svc.dispatch(m)
	case *parkReq:
		p.park(m)
	case *Arrived:
		for _, a := range m.Queues {
			p.wake(queueKey{a.Topic, a.QueueID})
		}
	case *Unpark:
		p.unparkGroup(m)
	case expireTick:
		p.expire(time.Now())
		p.arm()
	case *SearchByTime, *ReadAt, *StoreTimes, *SearchQueues, *ReadQueue, *Inspect:
		p.svc.dispatch(m)
	case *syncReq:
		p.svc.dispatch(m) // in order with the backlog
	case *syncAck:
		if n, ok := p.svc.syncs[m.req]; ok {
			if n <= 1 {
				delete(p.svc.syncs, m.req)
				m.req.done()
			} else {
				p.svc.syncs[m.req] = n - 1
			}
		}
	case *actor.Restarting:
		p.timer.Stop()
		p.answerAll()
	case *actor.Stopping:
		p.timer.Stop()
		p.answerAll()
		p.svc.failBacklog(&p.inline)
	}
}

func (p *Puller) arm() {
	p.timer.Arm(200*time.Millisecond, expireTick{})
}

// park parks a long poll a reader found nothing for, or answers it at once
// when its connection has too many parked.
func (p *Puller) park(m *parkReq) {
	r := m.r
	if p.byConn[r.ConnID] >= p.svc.maxParked() {
		if f := p.svc.opts.ParkRefused; f != nil {
			f()
		}
		p.svc.count(r, m.resp, false)
		r.Reply(m.resp)
		return
	}
	k := queueKey{r.Topic, r.QueueID}
	p.parked[k] = append(p.parked[k], r)
	p.byConn[r.ConnID]++
	if p.svc.opts.Parked != nil {
		p.svc.opts.Parked.Add(1)
		// The queue may have grown while Parked was 0 (no Arrived).
		if q := p.svc.opts.Store.Queues.Lookup(r.Topic, r.QueueID); q != nil && q.MaxOffset() != m.before {
			p.wake(k)
		}
	}
}

// unpark takes r off the per-connection count (the caller removed it from
// the table).
func (p *Puller) unpark(r *Request) {
	if n := p.byConn[r.ConnID]; n > 1 {
		p.byConn[r.ConnID] = n - 1
	} else {
		delete(p.byConn, r.ConnID)
	}
}

// unparked takes n pulls off the Parked count (n < 0: resets it).
func (p *Puller) unparked(n int) {
	switch {
	case p.svc.opts.Parked == nil:
	case n < 0:
		p.svc.opts.Parked.Store(0)
	case n > 0:
		p.svc.opts.Parked.Add(-int64(n))
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
		p.unpark(r)
		r.mayPark = true
		p.svc.dispatch(r)
	}
}

// unparkGroup serves Unpark.
func (p *Puller) unparkGroup(m *Unpark) {
	for _, q := range m.Queues {
		k := queueKey{m.Topic, q}
		reqs := p.parked[k]
		kept := reqs[:0]
		for _, r := range reqs {
			if r.Group != m.Group {
				kept = append(kept, r)
				continue
			}
			p.unparked(1)
			p.unpark(r)
			m.Each(r)
		}
		if len(kept) == 0 {
			delete(p.parked, k)
		} else {
			p.parked[k] = kept
		}
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
			p.unpark(r)
			r.mayPark = false
			p.svc.dispatch(r)
		}
		if len(kept) == 0 {
			delete(p.parked, k)
		} else {
			p.parked[k] = kept
		}
	}
}

// answerAll answers every parked pull, whatever its suspend timeout (on
// stop or restart: a new instance starts with an empty table). It reads
// here: the readers may be stopping too.
func (p *Puller) answerAll() {
	for k, reqs := range p.parked {
		delete(p.parked, k)
		p.unparked(len(reqs))
		for _, r := range reqs {
			p.unpark(r)
			p.inline.serve(r, false)
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

// syncReq is a barrier (tests): done runs on the pull stage once it and
// every reader processed what was sent to them before it, and the pull
// stage what the readers sent it meanwhile.
type syncReq struct{ done func() }

// syncReader carries a barrier to a reader, which answers with syncAck.
type syncReader struct{ req *syncReq }

// syncAck is a reader's answer to syncReader.
type syncAck struct{ req *syncReq }
