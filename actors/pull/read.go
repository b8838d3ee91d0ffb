package pull

import (
	"fmt"
	"sort"
	"time"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
)

// reader reads pulls against the store; each pull stage has its own (its
// scratch is reused from pull to pull).
type reader struct {
	svc  *Service
	opts *Options

	// Scratch reused from pull to pull (scanUnits).
	units    []consumequeue.Unit
	picked   []consumequeue.Unit
	pickedAt []int64
}

// serve answers r, or hands it to the pull stage to be parked when allowed
// and nothing is there yet. A request whose connection cannot take more
// answers is refused without a read.
func (p *reader) serve(r *Request, mayPark bool) {
	if r.Busy != nil {
		if remark := r.Busy(); remark != "" {
			r.Reply(Result{Outcome: Busy, Remark: remark})
			return
		}
	}
	var before int64 = -1
	if q := p.opts.Store.Queues.Lookup(r.Topic, r.QueueID); q != nil {
		before = q.MaxOffset()
	}
	resp, found := p.read(r)
	if !found && mayPark && r.SysFlag&FlagSuspend != 0 && time.Now().Before(r.SuspendUntil) &&
		resp.Outcome == NoNewMessage {
		p.svc.coord.Load().Send(&parkReq{r: r, before: before, resp: resp})
		return
	}
	p.svc.count(r, resp, found)
	r.Reply(resp)
}

// unitsPerRead is how many consume-queue units one read step fetches.
const unitsPerRead = 256

// maxScanUnits bounds how many filtered-out units one pull may skip.
const maxScanUnits = 16 * 1024

// read executes the pull against the store. found reports a Found answer.
func (p *reader) read(r *Request) (Result, bool) {
	q := p.opts.Store.Queues.Lookup(r.Topic, r.QueueID)
	if q == nil || q.MaxOffset() == 0 {
		out := NoNewMessage
		if r.Offset != 0 {
			out = OffsetMoved
		}
		return Result{Outcome: out, Remark: "NO_MESSAGE_IN_QUEUE"}, false
	}
	min, max := q.MinOffset(), q.MaxOffset()
	switch {
	case r.Offset < min:
		return Result{Outcome: OffsetMoved, Remark: "OFFSET_TOO_SMALL", Next: min, Min: min, Max: max}, false
	case r.Offset == max:
		return Result{Outcome: NoNewMessage, Remark: "OFFSET_OVERFLOW_ONE", Next: r.Offset, Min: min, Max: max}, false
	case r.Offset > max:
		return Result{Outcome: OffsetMoved, Remark: "OFFSET_OVERFLOW_BADLY", Next: max, Min: min, Max: max}, false
	}
	maxNums := int(r.MaxNums)
	if maxNums <= 0 {
		maxNums = 32
	}
	var sc scan
	if r.Filter.NeedsRecord() {
		sc = p.scanRecords(q, r, max, maxNums)
	} else {
		sc = p.scanUnits(q, r, max, maxNums)
	}
	if sc.err != "" {
		if kept := keptMin(p.opts.Store, q); kept > r.Offset {
			// Retention deleted the CommitLog under units the consume
			// queue still lists (it is trimmed right after): as below min.
			return Result{Outcome: OffsetMoved, Remark: "OFFSET_TOO_SMALL", Next: kept, Min: kept, Max: max}, false
		}
		return Result{Outcome: Failed, Remark: sc.err}, false
	}
	body, next, taken := sc.body, sc.next, sc.taken
	if taken == 0 {
		res := Result{Outcome: RetryImmediately, Remark: "NO_MATCHED_MESSAGE", Next: next, Min: min, Max: max}
		if next >= max {
			// Everything up to the end was filtered out: behave like "no new
			// message" so that a long poll can park at the end.
			res.Outcome, res.Remark = NoNewMessage, "OFFSET_OVERFLOW_ONE"
		}
		return res, false
	}
	return Result{Outcome: Found, Remark: "FOUND", Body: body, Messages: taken, Next: next, Min: min, Max: max}, true
}

// scan is the outcome of reading a pull's messages.
type scan struct {
	body  []byte // the records taken, back to back
	taken int    // how many
	next  int64  // queue offset the next pull starts from
	err   string // a read failure before anything was taken
}

// scanUnits picks the units whose tag passes the filter, then reads their
// records straight into the response body (one read per run of records
// adjacent in the CommitLog): the body is the only allocation that grows
// with the messages.
func (p *reader) scanUnits(q *consumequeue.Queue, r *Request, end int64, maxNums int) scan {
	next, scanned := r.Offset, 0
	picked, pickedAt := p.picked[:0], p.pickedAt[:0] // pickedAt: queue offset of each picked unit
	defer func() { p.picked, p.pickedAt = picked[:0], pickedAt[:0] }()
	pickedBytes := 0
loop:
	for next < end && len(picked) < maxNums && scanned < maxScanUnits {
		step := unitsPerRead
		if r.Filter.All {
			step = min(step, maxNums-len(picked))
		}
		units, err := q.ReadAppend(p.units[:0], next, step)
		p.units = units[:0]
		if err != nil {
			return scan{err: p.cqReadFailed(r, next, err)}
		}
		if len(units) == 0 {
			break
		}
		for _, u := range units {
			if len(picked) >= maxNums || (len(picked) > 0 && pickedBytes+int(u.Size) > p.opts.MaxBytes) {
				break loop
			}
			scanned++
			if u.IsHole() {
				next++ // its record was lost to CommitLog damage
				continue
			}
			if r.Filter.Match(u.TagsCode) {
				picked = append(picked, u)
				pickedAt = append(pickedAt, next)
				pickedBytes += int(u.Size)
			}
			next++
		}
	}
	sc := scan{next: next}
	if len(picked) == 0 {
		return sc
	}
	cl := p.opts.Store.CommitLog
	body := make([]byte, 0, pickedBytes+commitlog.EntryOverhead*len(picked))
	for i := 0; i < len(picked); {
		var n int
		body, n = storage.AppendRecords(cl, body, picked[i:])
		sc.taken += n
		if i += n; i == len(picked) {
			break
		}
		_, states := storage.ReadUnitsChecked(cl, picked[i:i+1])
		remark := p.unreadable(q.ID(), pickedAt[i], picked[i], states[0])
		if remark == "" {
			i++ // a damaged message, skipped
			continue
		}
		if sc.taken == 0 {
			return scan{err: remark}
		}
		sc.next = pickedAt[i] // answer what was read; the next pull retries here
		break
	}
	sc.body = body
	return sc
}

// scanRecords serves filters that look at the message itself (SQL92): it
// reads the records of the scanned units, in steps about as large as what
// is still wanted, and keeps those the filter passes.
func (p *reader) scanRecords(q *consumequeue.Queue, r *Request, end int64, maxNums int) scan {
	sc := scan{next: r.Offset}
	scanned := 0
	for sc.next < end && sc.taken < maxNums && scanned < maxScanUnits {
		step := min(unitsPerRead, max(recordStep, maxNums-sc.taken))
		units, err := q.Read(sc.next, step)
		if err != nil {
			return scan{err: p.cqReadFailed(r, sc.next, err)}
		}
		if len(units) == 0 {
			break
		}
		records, states := storage.ReadUnitsChecked(p.opts.Store.CommitLog, units)
		for i, u := range units {
			if sc.taken >= maxNums || (sc.taken > 0 && len(sc.body)+int(u.Size) > p.opts.MaxBytes) {
				return sc
			}
			if records[i] == nil {
				remark := ""
				if !u.IsHole() {
					remark = p.unreadable(q.ID(), sc.next, u, states[i])
				}
				if remark == "" { // a hole, or a damaged message skipped
					scanned++
					sc.next++
					continue
				}
				if sc.taken == 0 {
					return scan{err: remark}
				}
				return sc // the next pull retries here
			}
			scanned++
			if r.Filter.MatchRecord(records[i]) {
				sc.body = append(sc.body, records[i]...)
				sc.taken++
			}
			sc.next++
		}
	}
	return sc
}

// recordStep is the fewest units scanRecords reads per step.
const recordStep = 16

// unreadable applies Unreadable for a pull.
func (p *reader) unreadable(id consumequeue.QueueID, at int64, u consumequeue.Unit, state storage.UnitState) string {
	return Unreadable(p.opts.Store, p.opts.Logger, ByPull, id, at, u, state)
}

func (p *reader) cqReadFailed(r *Request, at int64, err error) string {
	p.opts.Logger.Error().Err(err).Str("topic", r.Topic).Int32("queue", r.QueueID).
		Int64("offset", at).Msg("consume queue read failed")
	return fmt.Sprintf("read consume queue: %v", err)
}

// searchByTime finds the first offset whose message was stored at or after
// the timestamp (binary search over the queue), or the queue's end.
func (p *reader) searchByTime(s *SearchByTime) int64 {
	q := p.opts.Store.Queues.Lookup(s.Topic, s.QueueID)
	if q == nil {
		return 0
	}
	min, max := keptMin(p.opts.Store, q), q.MaxOffset()
	failed := false
	i := sort.Search(int(max-min), func(i int) bool {
		units, err := q.Read(min+int64(i), 1)
		if err != nil || len(units) == 0 {
			failed = true
			return true
		}
		rec, err := p.opts.Store.CommitLog.ReadAt(units[0].Offset, units[0].Size)
		if err != nil {
			failed = true
			return true
		}
		return message.PeekStoreTimestamp(rec) >= s.Timestamp
	})
	if failed {
		p.opts.Logger.Warn().Str("topic", s.Topic).Int32("queue", s.QueueID).Msg("search by time hit a read error")
	}
	return min + int64(i)
}

// keptMin is the queue's first offset whose message the CommitLog still
// holds: its minimum, or above it in the moment between the CommitLog's
// retention and the trim of the queue.
func keptMin(st *storage.Store, q *consumequeue.Queue) int64 {
	min := q.MinOffset()
	clMin := st.CommitLog.MinOffset()
	if units, err := q.Read(min, 1); err != nil || len(units) == 0 || units[0].Offset >= clMin {
		return min
	}
	if kept, err := q.SearchByPhysOffset(clMin); err == nil {
		return kept
	}
	return min
}
