package broker

// The lite ack journal (docs/lite.md, "Acks after a failover"): a master
// appends the lite acks it took to the CommitLog as system records of
// LiteAckTopic, so they reach its replicas with the replication stream
// like the metadata log's offsets and the POP journal; a promoted replica
// applies them in CommitLog order when it indexes the lite messages it
// gained (litepromote.go), and a restart applies those past the lite log
// (catchUpLocked). The lite writer batches the acks of one flush into one
// record: an ack taken less than a flush before the master dies may come
// again (at least once).

import (
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/litelog"
	"github.com/wheelmq/wheelmq/storage/message"
)

// LiteAckTopic is the system topic of the lite ack journal: each record's
// body is a run of lite log Ack records (storage/litelog's encoding). It
// is never a configured topic (the rmq_sys_ prefix).
const LiteAckTopic = "rmq_sys_wheelmq_lite"

// liteAckChunk bounds one journal record's body.
const liteAckChunk = 256 << 10

// liteJournalAcks appends the Ack records among recs to the CommitLog
// (a serving master only; a replica takes no acks). The lite writer calls
// it with each flush.
func (b *Broker) liteJournalAcks(recs []litelog.Record) {
	if !b.ready.Load() || b.p.Role().Get().Kind == role.Replica {
		return
	}
	var bodies [][]byte
	var counts []int
	var body []byte
	n := 0
	for i := range recs {
		if recs[i].Kind != litelog.KindAck {
			continue
		}
		body = litelog.Append(body, &recs[i])
		n++
		if len(body) >= liteAckChunk {
			bodies, counts, body, n = append(bodies, body), append(counts, n), nil, 0
		}
	}
	if n > 0 {
		bodies, counts = append(bodies, body), append(counts, n)
	}
	for i, body := range bodies {
		now := nowMs()
		m := &message.Record{BornTimestamp: now, BornHost: b.advertise, StoreTimestamp: now, StoreHost: b.advertise,
			Body: body, Topic: LiteAckTopic, Properties: message.EncodeProperties(map[string]string{message.PropTags: "liteack"})}
		enc, err := m.Encode(make([]byte, 0, m.EncodedSize()))
		if err != nil {
			b.log.Error().Err(err).Int("acks", counts[i]).Msg("lite ack journal: record not encoded")
			continue
		}
		acks := counts[i]
		b.send.appends.Push(&writer.Append{Key: writer.QueueKey{Topic: LiteAckTopic}, Records: [][]byte{enc}, Kind: stats.KindSystem,
			Reply: func(res writer.Result) {
				if res.Err != nil {
					// Kept in the lite log here; a replica promoted
					// now delivers those messages again (at least once).
					b.log.Warn().Err(res.Err).Int("acks", acks).Msg("lite ack journal: record not appended")
					return
				}
				b.lite.journaled.Add(int64(acks))
			}})
	}
}

// liteApplyJournalLocked applies a lite ack journal record found by a
// CommitLog scan and records its acks in the lite log; it returns how many
// applied. mu held.
func (s *liteState) liteApplyJournalLocked(rec []byte) (int, error) {
	body, err := message.PeekBody(rec)
	if err != nil {
		return 0, err
	}
	n := 0
	err = litelog.DecodeAll(body, func(r *litelog.Record) {
		if r.Kind != litelog.KindAck {
			return
		}
		k := liteKey{r.Parent, r.Lite}
		if q := s.queues[k]; q != nil && s.replayAckLocked(q, r.Group, r.Offset) {
			s.recordLocked(*r)
			n++
		} else if q == nil && s.evictedLocked(k) {
			w := s.wantLocked(k) // applied after its reload (liteevict.go)
			w.acks = append(w.acks, *r)
			s.recordLocked(*r)
			n++
		}
	})
	return n, err
}

// LiteAcksJournaled counts the lite acks this broker appended to the
// CommitLog (the lite ack journal) since it started.
func (b *Broker) LiteAcksJournaled() int64 { return b.lite.journaled.Load() }
