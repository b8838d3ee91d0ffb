package broker

// Only active lite topics in memory (docs/lite.md, "Memory and files"):
// the lite writer evicts the lite topics with no subscriber and nothing in
// flight, least recently written first, while more than
// --lite-resident-max are in memory, or once idle past --lite-idle-evict.
// An evicted lite topic's messages (CommitLog offsets) and group positions
// go to the spill store (storage/litelog); memory keeps only its 64-bit
// hash. A send to it, a subscription to it or an ack the journal brings
// for it asks for it back: the writer reads its snapshot off the lock and
// installs it, then what was stored meanwhile, in order. The lite log
// keeps every record as before, so a restart needs no spill store.

import (
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/storage/litelog"
)

// liteEvictBatch bounds the lite topics one sweep evicts (the lock is
// held while it picks them).
const liteEvictBatch = 65536

// LiteEvictedSweepEvery is how often the lite writer reads the spill
// store for evicted lite topics past their TTL (1 minute; tests lower it).
var LiteEvictedSweepEvery atomic.Int64

func init() { LiteEvictedSweepEvery.Store(int64(time.Minute)) }

// liteSweepEvicted expires the evicted lite topics past their TTL (the
// lite writer, every LiteEvictedSweepEvery): an Expire record each, their
// hashes forgotten; one a send or a subscription wants back meanwhile is
// left to its reload, which expires it.
func (b *Broker) liteSweepEvicted(now time.Time) {
	s := &b.lite
	if len(s.evicted) == 0 || now.Sub(s.evictSweptAt) < time.Duration(LiteEvictedSweepEvery.Load()) {
		return
	}
	s.evictSweptAt = now
	ttls := map[string]time.Duration{}
	var expired []liteKey
	live := func(k litelog.SpillKey) bool { _, ok := s.evicted[litelog.Hash(k.Parent, k.Lite)]; return ok }
	err := s.spill.All(live, func(snap []litelog.Record) {
		ttl, ok := ttls[snap[0].Parent]
		if !ok {
			ttl = b.liteTTL(snap[0].Parent)
			ttls[snap[0].Parent] = ttl
		}
		if ttl > 0 && snap[0].Ms < now.Add(-ttl).UnixMilli() {
			expired = append(expired, liteKey{snap[0].Parent, snap[0].Lite})
		}
	})
	if err != nil {
		b.log.Error().Err(err).Msg("lite TTL sweep of the evicted lite topics: spill store unreadable")
	}
	if len(expired) == 0 {
		return
	}
	s.mu.Lock()
	for _, k := range expired {
		if s.reloads[k] != nil || s.queues[k] != nil {
			continue
		}
		delete(s.evicted, litelog.Hash(k.parent, k.lite))
		s.recordLocked(litelog.Record{Kind: litelog.KindExpire, Ms: now.UnixMilli(), Parent: k.parent, Lite: k.lite})
	}
	s.mu.Unlock()
	b.log.Debug().Int("liteTopics", len(expired)).Msg("evicted lite topics expired")
}

// liteReload is an evicted lite topic wanted back: what arrived for it
// since it was evicted, applied after its snapshot.
type liteReload struct {
	msgs []liteOffMs
	acks []litelog.Record
}

// liteOffMs is one message stored to an evicted lite topic.
type liteOffMs struct{ off, ms int64 }

// liteSpillDir is the spill store's directory under the lite log's.
func liteSpillDir(dataDir string) string { return filepath.Join(LiteDir(dataDir), "spill") }

// evictedLocked reports whether k is evicted. mu held.
func (s *liteState) evictedLocked(k liteKey) bool {
	if len(s.evicted) == 0 || s.queues[k] != nil {
		return false
	}
	_, ok := s.evicted[litelog.Hash(k.parent, k.lite)]
	return ok
}

// wantLocked asks the writer to reload k. mu held.
func (s *liteState) wantLocked(k liteKey) *liteReload {
	r := s.reloads[k]
	if r == nil {
		r = &liteReload{}
		s.reloads[k] = r
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return r
}

// storeLocked appends the message at off (stored at ms) to lite topic k
// and records it; an evicted k keeps it for its reload. It reports
// whether the message is new (not a duplicate). mu held.
func (s *liteState) storeLocked(k liteKey, off, ms int64) bool {
	if s.evictedLocked(k) {
		r := s.wantLocked(k)
		if n := len(r.msgs); n > 0 && off <= r.msgs[n-1].off {
			return false
		}
		r.msgs = append(r.msgs, liteOffMs{off, ms})
		s.indexed = max(s.indexed, off)
	} else if _, added := s.addLocked(k, off, ms); !added {
		return false
	}
	s.recordLocked(litelog.Record{Kind: litelog.KindMessage, Offset: off, Ms: ms, Parent: k.parent, Lite: k.lite})
	return true
}

// liteEvict evicts what the bounds say (the lite writer).
func (b *Broker) liteEvict(now time.Time) {
	s := &b.lite
	limit, idle := b.cfg.LiteResidentMax, b.cfg.LiteIdleEvict
	if (limit <= 0 && idle <= 0) || s.spill == nil {
		return
	}
	cut := now.Add(-idle).UnixMilli()
	var snaps [][]litelog.Record
	s.mu.Lock()
	for _, p := range s.parents {
		for q := p.head; q != nil && len(snaps) < liteEvictBatch; {
			next := q.next
			over := limit > 0 && len(s.queues) > limit
			if !over && (idle <= 0 || q.lastWrite >= cut) {
				break // the list is by last write: the rest are newer
			}
			if s.evictableLocked(q) {
				snaps = append(snaps, s.snapshotLocked(q))
				s.dropLocked(q)
				s.evicted[litelog.Hash(q.key.parent, q.key.lite)] = struct{}{}
			}
			q = next
		}
	}
	s.mu.Unlock()
	if len(snaps) == 0 {
		return
	}
	if err := s.spill.Put(snaps); err != nil {
		// Kept in memory: put them back as they were.
		b.log.Error().Err(err).Int("liteTopics", len(snaps)).Msg("lite eviction: spill store write failed; kept in memory")
		var tell []liteTold
		s.mu.Lock()
		for _, snap := range snaps {
			k := liteKey{snap[0].Parent, snap[0].Lite}
			tell = append(tell, b.liteInstallLocked(k, snap, now)...)
		}
		s.mu.Unlock()
		b.liteTell(tell)
		return
	}
	s.evictions.Add(int64(len(snaps)))
}

// evictableLocked: no subscriber, nothing in flight, no reload pending.
// mu held.
func (s *liteState) evictableLocked(q *liteQueue) bool {
	if len(s.subs[q.key]) > 0 || s.reloads[q.key] != nil {
		return false
	}
	for i := range q.groups {
		if q.groups[i].flight.token != 0 {
			return false
		}
	}
	return true
}

// snapshotLocked is q as spill records: an Evict record, its messages, one
// Ack per group position past its first message. mu held.
func (s *liteState) snapshotLocked(q *liteQueue) []litelog.Record {
	out := make([]litelog.Record, 0, 1+len(q.msgs)+len(q.groups))
	out = append(out, litelog.Record{Kind: litelog.KindEvict, Ms: q.lastWrite, Parent: q.key.parent, Lite: q.key.lite})
	for _, off := range q.msgs {
		out = append(out, litelog.Record{Kind: litelog.KindMessage, Offset: off, Ms: q.lastWrite, Parent: q.key.parent, Lite: q.key.lite})
	}
	for _, g := range q.groups {
		if i := g.acked - q.base - 1; i >= 0 && i < int64(len(q.msgs)) {
			out = append(out, litelog.Record{Kind: litelog.KindAck, Offset: q.msgs[i], Parent: q.key.parent, Lite: q.key.lite, Group: g.name})
		}
	}
	return out
}

// liteReloadWanted reloads the evicted lite topics wanted back (the lite
// writer): their buckets read off the lock, then each installed.
func (b *Broker) liteReloadWanted(now time.Time) {
	s := &b.lite
	s.mu.Lock()
	byBucket := map[int][]liteKey{}
	for k := range s.reloads {
		byBucket[litelog.Bucket(k.parent, k.lite)] = append(byBucket[litelog.Bucket(k.parent, k.lite)], k)
	}
	s.mu.Unlock()
	if len(byBucket) == 0 {
		return
	}
	began, n := time.Now(), 0
	defer func() {
		b.log.Debug().Int("liteTopics", n).Int("buckets", len(byBucket)).Dur("took", time.Since(began)).Msg("lite topics reloaded")
	}()
	// Only this goroutine changes evicted (under mu): reading it here
	// without mu races with no writer.
	live := func(k litelog.SpillKey) bool { _, ok := s.evicted[litelog.Hash(k.Parent, k.Lite)]; return ok }
	for bucket, keys := range byBucket {
		byLite := make(map[string][]string, len(keys)) // lite -> parents
		for _, k := range keys {
			byLite[k.lite] = append(byLite[k.lite], k.parent)
		}
		want := func(parent, lite []byte) bool {
			for _, p := range byLite[string(lite)] {
				if p == string(parent) {
					return true
				}
			}
			return false
		}
		snaps, err := s.spill.Lookup(bucket, want, live)
		if err != nil {
			// Their messages are still in the lite log: a restart has
			// them. Here they stay evicted until a read succeeds.
			b.log.Error().Err(err).Int("bucket", bucket).Msg("lite reload: spill store read failed")
			continue
		}
		var tell []liteTold
		s.mu.Lock()
		for _, k := range keys {
			tell = append(tell, b.liteInstallLocked(k, snaps[litelog.SpillKey{Parent: k.parent, Lite: k.lite}], now)...)
			s.reload.Add(1)
			n++
		}
		s.mu.Unlock()
		b.liteTell(tell)
	}
}

// liteTold is a dropped subscription to tell its client of.
type liteTold struct {
	ck  liteClientKey
	key liteKey
}

// liteTell tells the clients of their dropped subscriptions.
func (b *Broker) liteTell(tell []liteTold) {
	b.lite.mu.Lock()
	notify := b.lite.notify
	b.lite.mu.Unlock()
	if notify == nil {
		return
	}
	for _, t := range tell {
		notify(t.ck.group, t.ck.client, t.key.parent, t.key.lite)
	}
}

// liteInstallLocked puts k back in memory: snap (its spill snapshot, nil:
// none), then the messages and acks that came while it was evicted. A
// snapshot past its TTL is expired instead (an Expire record), its
// subscribers dropped (returned, to tell). mu held.
func (b *Broker) liteInstallLocked(k liteKey, snap []litelog.Record, now time.Time) []liteTold {
	s := &b.lite
	delete(s.evicted, litelog.Hash(k.parent, k.lite))
	r := s.reloads[k]
	delete(s.reloads, k)
	var tell []liteTold
	if len(snap) > 0 {
		if ttl := b.liteTTL(k.parent); ttl > 0 && snap[0].Ms < now.Add(-ttl).UnixMilli() {
			s.recordLocked(litelog.Record{Kind: litelog.KindExpire, Ms: now.UnixMilli(), Parent: k.parent, Lite: k.lite})
			for ck := range s.subs[k] {
				tell = append(tell, liteTold{ck, k})
				if c := s.clients[ck]; c != nil {
					delete(c.topics, k.lite)
				}
			}
			delete(s.subs, k)
			snap = nil
			if r != nil {
				// Stored after its TTL ran out: a new life, recorded again
				// after the Expire so that a replay keeps them.
				for _, m := range r.msgs {
					s.recordLocked(litelog.Record{Kind: litelog.KindMessage, Offset: m.off, Ms: m.ms, Parent: k.parent, Lite: k.lite})
				}
			}
		}
	}
	var q *liteQueue
	for _, rec := range snap {
		if rec.Kind == litelog.KindMessage {
			q, _ = s.addLocked(k, rec.Offset, rec.Ms)
		}
	}
	if q != nil {
		s.parents[q.key.parent].placeByWrite(q)
		for _, rec := range snap {
			if rec.Kind == litelog.KindAck {
				s.replayAckLocked(q, rec.Group, rec.Offset)
			}
		}
	}
	if r != nil {
		for _, m := range r.msgs {
			s.addLocked(k, m.off, m.ms)
		}
		for _, a := range r.acks {
			if q := s.queues[k]; q != nil {
				s.replayAckLocked(q, a.Group, a.Offset)
			}
		}
	}
	if q := s.queues[k]; q != nil && len(q.msgs) == 0 && len(s.subs[k]) == 0 {
		s.dropLocked(q)
	}
	s.wakeLocked(k)
	return tell
}

// litePlaceWalk bounds placeByWrite's search.
const litePlaceWalk = 1024

// placeByWrite moves q (just put at the back) to its place in the list by
// last write, searching from the front: a reloaded lite topic is among the
// least recently written. Past litePlaceWalk lite topics (those
// subscribed gather at the front) it leaves q at the back: later than its
// place, so that it never holds the TTL sweep back from older ones; it
// expires once those before it did.
func (p *liteParent) placeByWrite(q *liteQueue) {
	if q.prev == nil || q.prev.lastWrite <= q.lastWrite {
		return
	}
	at := p.head
	for i := 0; at != nil && at.lastWrite <= q.lastWrite; i++ {
		if i == litePlaceWalk {
			return
		}
		at = at.next
	}
	p.remove(q)
	p.insertBefore(q, at)
}

// liteEvictedLiveRecords are the lite log records that rebuild the
// evicted lite topics (the spill store's snapshots), for a compaction. The
// lite writer calls it off the lock.
func (s *liteState) liteEvictedLiveRecords() ([]litelog.Record, error) {
	var out []litelog.Record
	live := func(k litelog.SpillKey) bool { _, ok := s.evicted[litelog.Hash(k.Parent, k.Lite)]; return ok }
	err := s.spill.All(live, func(snap []litelog.Record) { out = append(out, snap[1:]...) })
	return out, err
}

// reloadRecordsLocked are the records of what came to evicted lite topics
// while they wait for a reload. mu held.
func (s *liteState) reloadRecordsLocked() []litelog.Record {
	var out []litelog.Record
	for k, r := range s.reloads {
		for _, m := range r.msgs {
			out = append(out, litelog.Record{Kind: litelog.KindMessage, Offset: m.off, Ms: m.ms, Parent: k.parent, Lite: k.lite})
		}
		out = append(out, r.acks...)
	}
	return out
}
