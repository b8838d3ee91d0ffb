package timer

// Stopped schedules (docs/timer.md, "Cancel, recall, listing"): a
// recurring timer's cancel writes one stop record to StopTopic (besides a
// TIMER_DEL of its first pending fire), naming the schedule by its real
// topic and original UNIQ_KEY. The timer service reads that topic's
// consume queue in full at start and polls it with enqueue_get, so the set
// of stopped schedules is rebuilt from the CommitLog after a crash,
// however far behind the enqueue side is; dequeue_get's catch-up waits for
// it (role.go). dequeue_put writes neither record of a fire of a stopped
// schedule (put.go, start), a replica's shadow batch does not wait for
// one (role.go), and the copy scan keeps no copy of one. The consume queue
// holds only durable (on a replica: confirmed) records, so a stop applies
// only once it survives a crash. A stop removed by retention is forgotten
// at the next start.

import (
	"net/netip"
	"strings"
	"sync"

	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/message"
)

// StopTopic is the system topic of schedule stop records; it has one
// queue, 0.
const StopTopic = "rmq_sys_wheel_schedule_stop"

// StopRecord encodes the stop record of the recurring timer origin (its
// UNIQ_KEY) of realTopic, stored at nowMs: a message of StopTopic, queue
// 0, with an empty body and the properties REAL_TOPIC, UNIQ_KEY (the
// origin, so the message index finds it by the schedule's message id, by
// a unique-key or a key query alike) and WHEEL_SCHEDULE_OF (the schedule
// text, for people).
// bornHost and storeHost are the caller's and the broker's addresses.
func StopRecord(realTopic, origin, text string, nowMs int64, bornHost, storeHost netip.AddrPort) ([]byte, error) {
	props := map[string]string{
		message.PropRealTopic: realTopic,
		message.PropUniqKey:   origin,
		schedule.PropOf:       text,
	}
	rec := &message.Record{QueueID: 0, BornTimestamp: nowMs, BornHost: bornHost, StoreTimestamp: nowMs,
		StoreHost: storeHost, Topic: StopTopic, Properties: message.EncodeProperties(props)}
	return rec.Encode(nil)
}

// stopKey is the stop set's key of a schedule: "<realTopic>+<origin>"
// (the TIMER_DEL_UNIQKEY form).
func stopKey(realTopic, origin string) string { return realTopic + "+" + origin }

// stopOf returns the stop key a stop record names ("" when rec is none).
func stopOf(rec []byte) string {
	if topic, err := message.PeekTopic(rec); err != nil || topic != StopTopic {
		return ""
	}
	raw, err := message.PeekProperties(rec)
	if err != nil {
		return ""
	}
	realTopic, _ := message.LookupProperty(raw, message.PropRealTopic)
	origin, _ := message.LookupProperty(raw, message.PropUniqKey)
	if realTopic == "" || origin == "" || strings.ContainsRune(realTopic, '+') {
		return ""
	}
	return stopKey(realTopic, origin)
}

// stopOfCopy returns the stop key of the schedule a written-back record
// belongs to: a fire (WHEEL_SCHEDULE_ORIGIN, in its real topic) or a
// next-fire record (REAL_TOPIC, UNIQ_KEY); "" for other records.
func stopOfCopy(rec []byte) string {
	topic, err := message.PeekTopic(rec)
	if err != nil {
		return ""
	}
	raw, err := message.PeekProperties(rec)
	if err != nil {
		return ""
	}
	if topic == Topic {
		realTopic, _ := message.LookupProperty(raw, message.PropRealTopic)
		origin, _ := message.LookupProperty(raw, message.PropUniqKey)
		return stopKey(realTopic, origin)
	}
	if origin, ok := message.LookupProperty(raw, schedule.PropOrigin); ok && origin != "" {
		return stopKey(topic, origin)
	}
	return ""
}

// stopSet is the set of stopped schedules, read from StopTopic's consume
// queue (enqueue_get reads, dequeue_put asks; guarded by mu).
type stopSet struct {
	mu   sync.Mutex
	m    map[string]struct{}
	next int64  // next StopTopic queue offset to read
	gen  uint64 // counts additions, so a reader sees when the set grew
}

// any reports whether a schedule is stopped at all (dequeue_put makes
// stop keys only then).
func (s *stopSet) any() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m) > 0
}

// stopped reports whether the schedule of stop key k is stopped.
func (s *stopSet) stopped(k string) bool {
	if k == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[k]
	return ok
}

// generation is a counter that grows whenever a schedule is stopped.
func (s *stopSet) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// readTo is how far the set has read StopTopic's queue.
func (s *stopSet) readTo() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// readStops adds the stop records StopTopic's consume queue holds past
// what was read (all of them at start). It runs on enqueue_get only; the
// records are read without the set's lock, which is taken to publish
// them. When the queue was cut below what was read (the reconcile of a
// truncated log tail), the whole queue is read again into a new set that
// replaces the old one at once (the stops cut no longer apply).
func (s *Service) readStops() {
	st := s.opts.Store
	q := st.Queues.Lookup(StopTopic, 0)
	if q == nil {
		return
	}
	read := s.stops.readTo()
	from, fresh := read, read > q.MaxOffset()
	if fresh {
		s.opts.Logger.Warn().Int64("read_to", read).Int64("queue_end", q.MaxOffset()).Msg("schedule stop queue cut; re-reading it")
		from = 0
	}
	from = max(from, q.MinOffset()) // retention cut the queue's head: read from its start
	var keys []string
	for from < q.MaxOffset() {
		units, err := q.Read(from, enqueueReadBatch)
		if err != nil {
			s.opts.Logger.Error().Err(err).Int64("offset", from).Msg("read schedule stop queue failed")
			break
		}
		if len(units) == 0 {
			break
		}
		records, states := storage.ReadUnitsChecked(st.CommitLog, units)
		taken := len(units)
		for i, rec := range records {
			if rec == nil && states[i] == storage.UnitDamaged {
				st.ReportDamagedUnit(q.ID(), from+int64(i)) // the dispatcher rebuilds the queue; read on after that
				taken = i
				break
			}
			if k := stopOf(rec); k != "" {
				keys = append(keys, k)
			} else {
				s.opts.Logger.Warn().Int64("commitlog_offset", units[i].Offset).Msg("schedule stop record unreadable; skipped")
			}
		}
		from += int64(taken)
		if taken < len(units) {
			break
		}
	}
	s.stops.mu.Lock()
	defer s.stops.mu.Unlock()
	if fresh || s.stops.m == nil {
		s.stops.m = make(map[string]struct{}, len(keys))
	}
	for _, k := range keys {
		if _, ok := s.stops.m[k]; !ok {
			s.stops.m[k] = struct{}{}
			s.stops.gen++
		}
	}
	s.stops.next = from
}

// releaseStopped (replica) ends the waits of shadow batches for the fires
// of schedules stopped since the last call: the master writes none.
func (d *dequeuePut) releaseStopped() {
	stops := &d.svc.stops
	if gen := stops.generation(); gen != d.stopGen {
		d.stopGen = gen
	} else {
		return
	}
	for _, p := range d.queue {
		if !p.pb.shadow {
			continue
		}
		for i := range p.pb.puts {
			pu := &p.pb.puts[i]
			if !stops.stopped(pu.stopID()) {
				continue
			}
			if id := pu.identity(); d.awaiting[id] == p {
				delete(d.awaiting, id)
				p.waiting--
			}
		}
	}
}
