package writer

import (
	"time"

	"fmt"

	"github.com/wheelmq/wheelmq/storage/message"
)

// maxDrainRecords caps the records written by one drain.
const maxDrainRecords = 4096

// slot is the writer's record of one Append of the drain under way. What
// the writer learns about an append (stored or not, where, or why not)
// lives here and not in the Append, which belongs to its sender again once
// it is answered.
type slot struct {
	a      *Append // nil once answered: nothing reaches the Append after
	res    Result  // the outcome so far (Err set: refused)
	stored bool    // its records are in the CommitLog; res says where
}

// maxRounds bounds the batches one drainNow writes before the writer lets
// its other messages in.
const maxRounds = 8

// drainAll writes what the stash and the inbox hold, batch after batch,
// until both are empty (or maxRounds batches were written: it then queues a
// drainNow to go on after the other messages in its mailbox).
func (w *Writer) drainAll() {
	for range maxRounds {
		batch := append(w.batch[:0], w.stash...)
		clear(w.stash)
		w.stash = w.stash[:0]
		if w.opts.Inbox != nil {
			batch = w.opts.Inbox.Take(batch)
		}
		if len(batch) == 0 {
			return
		}
		w.drainBatch(batch)
		w.restartIfFailed()
	}
	if !w.drainQueued {
		w.drainQueued = true
		w.self.Send(drainNow{})
	}
}

// drainStash writes the appends sent with Stage.Send (on stop or restart:
// what the inbox holds stays there for the next instance).
func (w *Writer) drainStash() {
	batch := append(w.batch[:0], w.stash...)
	clear(w.stash)
	w.stash = w.stash[:0]
	w.drainBatch(batch)
}

// drainBatch writes batch in chunks of at most maxDrainRecords records and
// answers every append of it once, also when a panic interrupts it
// (rescue). The appends move from batch into the writer's slots, which
// hold the only reference to each until it is answered.
func (w *Writer) drainBatch(batch []*Append) {
	slots := w.slots[:0]
	for _, a := range batch {
		slots = append(slots, slot{a: a})
	}
	clear(batch)
	w.batch, w.slots = batch[:0], slots
	if err := w.refusal(); err != nil {
		for i := range slots {
			w.reply(&slots[i], Result{Err: err})
		}
		w.flushOut()
		clear(slots)
		return
	}
	defer func() {
		r := recover()
		if r != nil {
			w.rescue(slots, r)
		}
		if w.wrote && w.opts.Appended != nil {
			w.opts.Appended() // after the answers: they leave first
		}
		w.wrote = false
		clear(slots)
		if w.opts.Confirmer != nil {
			w.waitHeld() // one wait for the batch, also after a rescue
		}
		if r != nil {
			panic(r)
		}
	}()
	start, total := time.Now(), 0
	for i := range slots {
		total += len(slots[i].a.Records)
	}
	for rest := slots; len(rest) > 0; {
		n, records := 0, 0
		for n < len(rest) && (n == 0 || records+len(rest[n].a.Records) <= maxDrainRecords) {
			records += len(rest[n].a.Records)
			n++
		}
		w.drain(rest[:n])
		rest = rest[n:]
	}
	if w.opts.Mode == FlushSync && w.wrote {
		if w.opts.Written != nil {
			w.opts.Written() // replicas receive the batch while it is fsynced here
		}
		w.answer(slots, true, w.sync()) // group commit: one fsync for the batch
	}
	if w.wrote && w.opts.PutTime != nil {
		w.opts.PutTime(time.Since(start), total)
	}
}

// drain writes the appends of slots (one CommitLog write when it can) and
// answers those it may (see answer). A failed combined write is retried
// append by append, so that one bad request fails alone.
func (w *Writer) drain(slots []slot) {
	durable := w.opts.Mode == FlushAsync // sync flush: answered after the batch's fsync
	if len(slots) > 1 && w.write(slots) {
		w.answer(slots, durable, nil)
		return
	}
	for i := range slots {
		w.write(slots[i : i+1])
		w.answer(slots[i:i+1], durable, nil)
	}
}

// write assigns queue offsets and appends the records of slots (none
// answered yet) in one CommitLog write. On success each slot is stored and
// holds its result; on failure nothing changed, and a lone slot holds the
// error.
func (w *Writer) write(slots []slot) bool {
	clear(w.touched)
	records := w.records[:0]
	defer func() {
		clear(records)
		w.records = records[:0]
	}()
	for i := range slots {
		s := &slots[i]
		m := s.a
		base, ok := w.touched[m.Key]
		if !ok {
			if base, ok = w.next[m.Key]; !ok {
				base = w.queueMax(m.Key)
			}
		}
		for j, rec := range m.Records {
			message.SetQueueOffset(rec, base+int64(j))
		}
		s.res.QueueOffset = base
		w.touched[m.Key] = base + int64(len(m.Records))
		records = append(records, m.Records...)
	}
	if err := w.opts.Store.CommitLog.AppendInPlace(records); err != nil {
		if len(slots) == 1 {
			m := slots[0].a
			w.opts.Logger.Error().Err(err).Str("topic", m.Key.Topic).Int32("queue", m.Key.QueueID).
				Int("records", len(m.Records)).Msg("commitlog append failed")
			slots[0].res = Result{Err: fmt.Errorf("commitlog append: %w", err)}
		}
		return false
	}
	for k, v := range w.touched {
		w.next[k] = v
	}
	for i := range slots {
		s := &slots[i]
		m := s.a
		if len(m.Records) == 1 {
			m.one[0] = message.PeekPhysicalOffset(m.Records[0])
			s.res.Offsets = m.one[:]
		} else {
			s.res.Offsets = make([]int64, len(m.Records))
			for j, rec := range m.Records {
				s.res.Offsets[j] = message.PeekPhysicalOffset(rec)
			}
		}
		s.stored = true
		if w.opts.Stored != nil {
			n := 0
			for _, rec := range m.Records {
				n += len(rec)
			}
			topic := m.Topic
			if topic == "" {
				topic = m.Key.Topic
			}
			w.opts.Stored(m.Kind, topic, m.MsgType, len(m.Records), n)
		}
	}
	w.wrote = true
	if w.opts.Fault != nil {
		w.opts.Fault()
	}
	return true
}

// answer replies to the appends of slots not answered yet: the refused
// ones, and the stored ones once durable says they may be (async flush, or
// after the fsync that covered them; syncErr is that fsync's failure, which
// they are answered with). Replies go out through the writer's Outbox: each
// connection is written once for the batch.
func (w *Writer) answer(slots []slot, durable bool, syncErr error) {
	defer w.flushOut()
	for i := range slots {
		s := &slots[i]
		switch {
		case s.a == nil: // answered
		case s.res.Err != nil:
			w.reply(s, s.res)
		case s.stored && durable:
			res := s.res
			if syncErr != nil {
				res = Result{Err: syncErr}
			} else if w.opts.Confirmer != nil {
				w.hold(s) // answered once its replicas confirm it (confirm.go)
				continue
			}
			w.reply(s, res)
		}
	}
}

// reply answers the append of s with res: the one place the writer
// answers an append it took. It forgets the Append before calling Reply,
// so that nothing the writer does later (another pass over the drain, a
// rescue after a panic, even one inside this Reply) reaches an Append its
// sender may have recycled already.
func (w *Writer) reply(s *slot, res Result) {
	a := s.a
	*s = slot{}
	res.Out = w.out
	a.Reply(res)
}

// rescue answers every append of a drain that a panic interrupted and
// that is not answered yet: those whose records reached the CommitLog get
// their result (in sync flush mode after an fsync, or its error), the
// others an error the client retries. Nothing is left to time out, no
// stored message is reported as failed, and no append is answered twice.
func (w *Writer) rescue(slots []slot, reason any) {
	defer w.flushOut()
	stored := 0
	for i := range slots {
		s := &slots[i]
		switch {
		case s.a == nil: // answered
		case s.stored:
			stored++
		case s.res.Err != nil:
			w.reply(s, s.res)
		default:
			w.reply(s, Result{Err: fmt.Errorf("commitlog writer failed before storing the message: %v", reason)})
		}
	}
	if stored > 0 {
		var syncErr error
		if w.opts.Mode == FlushSync {
			syncErr = w.sync()
		}
		w.answer(slots, true, syncErr)
	}
	w.opts.Logger.Error().Str("reason", fmt.Sprint(reason)).Int("appends", len(slots)).Int("stored", stored).
		Msg("commitlog writer failed during a drain; every append of it answered")
}
