package broker

// The lite state's life: OpenLite replays the lite log and catches up
// with the CommitLog, then starts the lite writer, a goroutine that
// appends the log, expires idle lite topics and compacts the log;
// CloseLite stops it.

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/actors/recovery"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/litelog"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// liteSweepEvery is the lite writer's cadence: TTL sweeps and compaction
// checks.
const liteSweepEvery = 250 * time.Millisecond

// LiteCompactBytes is the lite log's size from which the lite writer
// compacts it when its live records are under half of it (64 MiB; tests
// lower it).
var LiteCompactBytes atomic.Int64

func init() { LiteCompactBytes.Store(64 << 20) }

// LiteDir is the directory of the lite log under the data directory.
func LiteDir(dataDir string) string { return filepath.Join(dataDir, "lite") }

// OpenLite loads the lite topics' state: the lite log's records, then the
// lite messages the CommitLog holds past the log's last one (those a
// crash kept from the log). Call once, before Serve.
func (b *Broker) OpenLite() error {
	s := &b.lite
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open {
		return nil
	}
	began := time.Now()
	s.indexed = -1
	s.queues = map[liteKey]*liteQueue{}
	s.parents = map[string]*liteParent{}
	s.clients = map[liteClientKey]*liteClient{}
	s.subs = map[liteKey]map[liteClientKey]struct{}{}
	s.kick = make(chan struct{}, 1)
	s.stop = make(chan struct{})
	s.evicted = map[uint64]struct{}{}
	s.reloads = map[liteKey]*liteReload{}
	spill, err := litelog.OpenSpill(liteSpillDir(b.cfg.DataDir))
	if err != nil {
		return fmt.Errorf("open lite spill store: %w", err)
	}
	s.spill = spill
	var lastMsg, checkpoint int64 = -1, -1
	if !litelog.Exists(LiteDir(b.cfg.DataDir)) && b.hasLiteTopic() {
		checkpoint = 0 // no log (lost): every lite message of the CommitLog is indexed again
	}
	log, err := litelog.Open(LiteDir(b.cfg.DataDir), func(r *litelog.Record) {
		switch r.Kind {
		case litelog.KindMessage:
			s.addLocked(liteKey{r.Parent, r.Lite}, r.Offset, r.Ms)
			lastMsg = max(lastMsg, r.Offset)
		case litelog.KindAck:
			if q := s.queues[liteKey{r.Parent, r.Lite}]; q != nil {
				s.replayAckLocked(q, r.Group, r.Offset)
			}
		case litelog.KindExpire:
			if q := s.queues[liteKey{r.Parent, r.Lite}]; q != nil {
				s.dropLocked(q)
			}
		case litelog.KindCheckpoint:
			checkpoint = max(checkpoint, r.Offset)
		}
	})
	if err != nil {
		return fmt.Errorf("open lite log: %w", err)
	}
	s.log = log
	scanFrom := checkpoint
	if lastMsg >= checkpoint {
		scanFrom = lastMsg + 1 // past the newest recorded message (catchUpLocked skips to its end)
	}
	n, end, err := b.catchUpLocked(scanFrom, lastMsg)
	if err != nil {
		_ = log.Close()
		return err
	}
	s.scanned, s.epoch = end, b.p.Role().Get().Epoch
	s.recordLocked(litelog.Record{Kind: litelog.KindCheckpoint, Offset: end, Ms: nowMs()})
	// Written now, before any send (Serve comes after): a crash right after
	// the start must find the checkpoint, or it would not scan what it
	// missed. (mu is held, but nothing can call yet.)
	if err := log.Write(s.pending); err == nil {
		if err := log.Flush(); err != nil {
			_ = log.Close()
			return err
		}
	} else {
		_ = log.Close()
		return err
	}
	s.pending = nil
	b.log.Info().Int("liteTopics", len(s.queues)).Int("caughtUp", n).Int64("from", scanFrom).
		Int64("to", end).Dur("took", time.Since(began)).Msg("lite topics loaded")
	s.open = true
	recovery.Supervise(&s.wg, s.stop, time.Second, func(p *recovery.Panic) {
		recovery.Log(b.log, p, "lite writer")
	}, b.liteWriter)
	return nil
}

// hasLiteTopic reports whether the broker has a LITE topic.
func (b *Broker) hasLiteTopic() bool {
	if t := b.p.Topics().Load(); t != nil {
		for _, cfg := range t.Topics {
			if LiteTopic(cfg) {
				return true
			}
		}
	}
	return false
}

// replayAckLocked applies an Ack record: group consumed (parent, lite)
// through the message at off. It reports whether that moved the group's
// position. mu held.
func (s *liteState) replayAckLocked(q *liteQueue, group string, off int64) bool {
	for i, o := range q.msgs {
		if o == off {
			g := q.group(group)
			if g.acked >= q.base+int64(i)+1 {
				return false
			}
			if g.flight.token != 0 && g.flight.seq <= q.base+int64(i) {
				g.flight = liteFlight{} // acked elsewhere (the old master): not in flight here
				s.flights--
			}
			g.acked = q.base + int64(i) + 1
			q.trim()
			if len(q.msgs) == 0 && len(s.subs[q.key]) == 0 {
				s.dropLocked(q)
			}
			return true
		}
	}
	return false
}

// catchUpLocked indexes the lite messages of the CommitLog from offset
// from (0 and below: its first record, for a data directory without a lite
// log; -1 when a log with no record is there: nothing) to its end; from is
// lastMsg+1 when the scan starts after the record at lastMsg. mu held (at
// start, before any call).
func (b *Broker) catchUpLocked(from, lastMsg int64) (n int, end int64, err error) {
	cl := b.p.Store().CommitLog
	end = cl.MaxOffset()
	if from < 0 || !b.hasLiteTopic() {
		return 0, end, nil // no LITE topic: no lite message to index
	}
	if lastMsg >= 0 && from == lastMsg+1 {
		from = end
		if _, next, err := cl.Read(lastMsg); err == nil {
			from = next
		} else if !errors.Is(err, io.EOF) {
			from = cl.MinOffset() // the record is gone (retention): scan what is left
		}
	}
	from = max(from, cl.MinOffset())
	for off := from; off < end; {
		rec, next, err := cl.Read(off)
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, commitlog.ErrCorrupt) {
			// A damaged entry (the dispatcher reports it, and skips or
			// stops by --on-corruption): what it held is not indexed.
			to, nerr := cl.NextValid(off)
			if nerr != nil || to <= off {
				b.log.Error().Err(err).Int64("offset", off).Msg("lite catch-up stops at a damaged commitlog entry")
				break
			}
			b.log.Warn().Err(err).Int64("offset", off).Int64("next", to).Msg("lite catch-up skips a damaged commitlog entry")
			off = to
			continue
		}
		if err != nil {
			return n, end, fmt.Errorf("lite catch-up: read commitlog at %d: %w", off, err)
		}
		props, perr := message.PeekProperties(rec)
		if perr != nil {
			off = next
			continue
		}
		if topic, _ := message.PeekTopic(rec); topic == LiteAckTopic {
			if _, jerr := b.lite.liteApplyJournalLocked(rec); jerr != nil {
				b.log.Warn().Err(jerr).Int64("offset", off).Msg("lite catch-up skips a damaged lite ack journal record")
			}
			off = next
			continue
		}
		if lite, ok := message.LookupPropertyBytes(props, message.PropLiteTopic); ok {
			topic, _ := message.PeekTopic(rec)
			if cfg, ok := b.p.Topics().Get(topic); ok && cfg.TopicMessageType() == meta.MessageTypeLite {
				if b.lite.storeLocked(liteKey{topic, string(lite)}, off, message.PeekStoreTimestamp(rec)) {
					n++
				}
			}
		}
		off = next
	}
	return n, end, nil
}

// CloseLite stops the lite writer and closes the lite log (its pending
// records written).
func (b *Broker) CloseLite() error {
	s := &b.lite
	s.mu.Lock()
	if !s.open {
		s.mu.Unlock()
		return nil
	}
	s.open = false
	s.mu.Unlock()
	close(s.stop)
	s.wg.Wait()
	b.liteFlush()
	s.mu.Lock()
	s.queues, s.parents, s.clients, s.subs = nil, nil, nil, nil // the state is the log's now
	s.mu.Unlock()
	return s.log.Close()
}

// liteWriter appends the pending records, expires idle lite topics and
// compacts the log, until CloseLite (which writes what is left).
func (b *Broker) liteWriter() {
	s := &b.lite
	t := time.NewTicker(liteSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		case <-t.C:
			b.liteSweep(time.Now())
			b.liteEvict(time.Now())
			b.liteSweepEvicted(time.Now())
			b.liteMaybeCompact()
		}
		b.liteFlush()
		b.liteReloadWanted(time.Now())
	}
}

// liteFlush writes the pending records out.
func (b *Broker) liteFlush() {
	s := &b.lite
	s.mu.Lock()
	recs := s.pending
	s.pending = nil
	s.mu.Unlock()
	if len(recs) == 0 {
		return
	}
	b.liteJournalAcks(recs)
	if err := s.log.Write(recs); err == nil {
		err = s.log.Flush()
		if err != nil {
			b.log.Error().Err(err).Msg("lite log write")
		}
	} else {
		b.log.Error().Err(err).Msg("lite log write")
	}
}

// liteMaybeCompact rewrites the log when it is large and mostly dead.
func (b *Broker) liteMaybeCompact() {
	s := &b.lite
	if s.log.Size() < LiteCompactBytes.Load() {
		return
	}
	s.mu.Lock()
	estimate := s.liveCountLocked() + 2*len(s.evicted)
	s.mu.Unlock()
	if int64(estimate)*64 > s.log.Size()/2 {
		return
	}
	// The evicted lite topics' records (liteevict.go) go first: only this
	// goroutine changes the spill store and the evicted set.
	evicted, err := s.liteEvictedLiveRecords()
	if err != nil {
		b.log.Error().Err(err).Msg("lite log compaction: spill store unreadable; the log stays as it is")
		return
	}
	s.mu.Lock()
	live := append(evicted, s.reloadRecordsLocked()...)
	live = append(live, s.liveRecordsLocked()...)
	s.pending = nil // the live records include them
	indexed := s.indexed
	s.mu.Unlock()
	// A Checkpoint past the newest message indexed: the consumed ones are
	// not in the live records, and must not be indexed again at start.
	if indexed >= 0 {
		from := indexed
		if _, next, err := b.p.Store().CommitLog.Read(indexed); err == nil {
			from = next
		}
		live = append([]litelog.Record{{Kind: litelog.KindCheckpoint, Offset: from, Ms: nowMs()}}, live...)
	}
	if err := s.log.Compact(live); err != nil {
		b.log.Error().Err(err).Msg("lite log compaction")
	}
}

// liveCountLocked counts the records liveRecordsLocked returns. mu held.
func (s *liteState) liveCountLocked() int {
	n := 0
	for _, q := range s.queues {
		n += len(q.msgs) + len(q.groups)
	}
	return n
}

// liveRecordsLocked are the records that rebuild the resident state. mu
// held.
func (s *liteState) liveRecordsLocked() []litelog.Record {
	var out []litelog.Record
	for _, q := range s.queues {
		for _, off := range q.msgs {
			out = append(out, litelog.Record{Kind: litelog.KindMessage, Offset: off, Ms: q.lastWrite,
				Parent: q.key.parent, Lite: q.key.lite})
		}
		for _, g := range q.groups {
			if i := g.acked - q.base - 1; i >= 0 && i < int64(len(q.msgs)) {
				out = append(out, litelog.Record{Kind: litelog.KindAck, Offset: q.msgs[i], Parent: q.key.parent,
					Lite: q.key.lite, Group: g.name})
			}
		}
	}
	return out
}

// liteTTL is parent's lite topic TTL (0: never): its lite.topic.expiration
// in minutes, else the broker's --lite-expiration.
func (b *Broker) liteTTL(parent string) time.Duration {
	if cfg, ok := b.p.Topics().Get(parent); ok {
		if v, ok := cfg.Attributes[meta.AttrLiteExpiration]; ok {
			if m, err := strconv.ParseInt(v, 10, 64); err == nil {
				if m <= 0 {
					return 0
				}
				return time.Duration(m) * time.Minute
			}
		}
	}
	return b.cfg.LiteExpiration
}

// liteSweep expires the lite topics idle past their TTL and tells their
// subscribers.
func (b *Broker) liteSweep(now time.Time) {
	s := &b.lite
	type told struct {
		ck  liteClientKey
		key liteKey
	}
	var tell []told
	s.mu.Lock()
	for parent, p := range s.parents {
		ttl := b.liteTTL(parent)
		if ttl <= 0 {
			continue
		}
		cut := now.Add(-ttl).UnixMilli()
		for q := p.head; q != nil && q.lastWrite < cut; q = p.head {
			for _, ck := range s.dropLocked(q) {
				tell = append(tell, told{ck, q.key})
			}
			s.recordLocked(litelog.Record{Kind: litelog.KindExpire, Ms: now.UnixMilli(), Parent: q.key.parent, Lite: q.key.lite})
			b.log.Debug().Str("topic", q.key.parent).Str("liteTopic", q.key.lite).Msg("lite topic expired")
			if s.parents[parent] == nil {
				break
			}
		}
	}
	notify := s.notify
	s.mu.Unlock()
	if notify != nil {
		for _, t := range tell {
			notify(t.ck.group, t.ck.client, t.key.parent, t.key.lite)
		}
	}
}
