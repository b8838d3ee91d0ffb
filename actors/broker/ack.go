package broker

// Acks: one call for one delivery or a batch of them (one request to the
// pop stage, one journal append), and the move of a delivery to its
// group's dead-letter queue.

import (
	"github.com/wheelmq/wheelmq/actors/pop"
)

// AckEntry names deliveries of one queue popped together: Handle's queue,
// pop time and invisible time, and its Offset or, when set, each of
// Offsets.
type AckEntry struct {
	// Group and Topic override the request's when set (a remoting batch
	// ack names them per entry).
	Group, Topic string
	Handle       pop.Handle
	Offsets      []int64
}

// offsets lists the entry's offsets.
func (e *AckEntry) offsets() []int64 {
	if e.Offsets != nil {
		return e.Offsets
	}
	return []int64{e.Handle.Offset}
}

// AckRequest acks Entries of (Group, Topic).
type AckRequest struct {
	Group, Topic string
	Entries      []AckEntry
}

// AckResult tells each entry's outcome: Refused[i] is nil when every
// offset of Entries[i] was acked, else why not (HandleExpired: no longer
// in flight).
type AckResult struct {
	Refused []*Error
	// Acked counts the offsets acked.
	Acked int
}

// names returns an entry's group and topic.
func (r *AckRequest) names(e *AckEntry) (string, string) {
	g, t := e.Group, e.Topic
	if g == "" {
		g = r.Group
	}
	if t == "" {
		t = r.Topic
	}
	return g, t
}

// ackCheck checks every group and topic an ack names.
func (b *Broker) ackCheck(c Caller, r *AckRequest) *Error {
	if !b.Ready() {
		return Errorf(Busy, "[STARTING]broker is starting, try again")
	}
	seen := map[[2]string]bool{}
	for i := range r.Entries {
		g, t := r.names(&r.Entries[i])
		if g == "" || t == "" {
			return Errorf(BadRequest, "ack entry %d without consumerGroup or topic", i)
		}
		if seen[[2]string{g, t}] {
			continue
		}
		seen[[2]string{g, t}] = true
		if err := b.authorize(c, consumeNeeds(g, t)...); err != nil {
			return err
		}
		if _, ok := b.p.Topics().Get(t); !ok {
			return Errorf(TopicNotFound, "topic[%s] not exist, apply first please!", t)
		}
		if _, err := b.ConsumeAllowed(g); err != nil {
			return err
		}
	}
	return nil
}

// Ack acks the request's deliveries in one request to the pop stage.
func (b *Broker) Ack(c Caller, r *AckRequest, done func(*AckResult, *Error)) {
	err := b.ackCheck(c, r)
	var st interface{ Send(any) }
	if err == nil {
		st, err = b.stageFor(pop.StageName)
	}
	if err != nil {
		done(nil, err)
		return
	}
	items := make([]pop.AckItem, len(r.Entries))
	for i := range r.Entries {
		e := &r.Entries[i]
		g, t := r.names(e)
		items[i] = pop.AckItem{Group: g, Topic: t, QueueID: e.Handle.QueueID, PopTime: e.Handle.PopTime,
			InvisibleTime: e.Handle.InvisibleTime, Offsets: e.offsets()}
	}
	st.Send(&pop.BatchAck{Items: items, FailFunc: failed("ack", func(e *Error) { done(nil, e) }),
		Reply: func(code int32, remark string, each []int32) {
			if code != pop.CodeSuccess {
				done(nil, engineError(code, remark))
				return
			}
			res := &AckResult{Refused: make([]*Error, len(items))}
			k := 0
			for i, it := range items {
				var acked []int64
				for _, off := range it.Offsets {
					if k < len(each) && each[k] == pop.CodeSuccess {
						acked = append(acked, off)
					} else if res.Refused[i] == nil {
						res.Refused[i] = Errorf(HandleExpired, "receipt handle is expired")
					}
					k++
				}
				res.Acked += len(acked)
			}
			done(res, nil)
		}})
}

// ForwardToDeadLetter moves the delivery h names to group's dead-letter
// queue and acks it, in one request to the pop stage
// (ForwardMessageToDeadLetterQueue): done hears nil once the copy is
// stored and the delivery acked, HandleExpired when it is no longer in
// flight.
func (b *Broker) ForwardToDeadLetter(c Caller, group, topic string, h pop.Handle, done func(*Error)) {
	r := &AckRequest{Group: group, Topic: topic, Entries: []AckEntry{{Handle: h}}}
	err := b.ackCheck(c, r)
	var st interface{ Send(any) }
	if err == nil {
		st, err = b.stageFor(pop.StageName)
	}
	if err != nil {
		done(err)
		return
	}
	st.Send(&pop.DeadLetter{Group: group, Topic: topic, Handle: h, FailFunc: failed("dead letter", done),
		Reply: func(code int32, remark string) {
			if code != pop.CodeSuccess {
				done(engineError(code, remark))
				return
			}
			done(nil)
		}})
}
