package retention

import (
	"fmt"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// RollTopic holds the copies of timer messages rolled forward by retention.
// Nothing reads its consume queue (the TimerLog refers to the copies by
// CommitLog offset); it is trimmed like any other. It is not the timer
// topic, so the enqueue side never sees a copy as a new timer.
const RollTopic = timer.RollTopic

// rollAppendRecords caps the records of one roll append.
const rollAppendRecords = 512

// rollBucket copies the messages of a far bucket's timers that lie below
// the roll limit to the end of the CommitLog (through the writer), then
// waits for the answers (appended).
func (s *Retention) rollBucket(bucket int64) {
	r := s.r
	r.bucket = bucket
	r.relocs = map[int64]timerwheel.Relocation{}
	timers, err := s.opts.Wheel.FarTimersBelow(bucket, r.rollBelow)
	if err != nil {
		s.finish(fmt.Errorf("retention: read timer bucket %d: %w", bucket, err))
		return
	}
	nowMs := s.opts.Now().UnixMilli()
	var recs [][]byte
	var olds []int64
	var sizes []int32
	flush := func() {
		if len(recs) == 0 {
			return
		}
		epoch, o, z := r.epoch, olds, sizes
		r.waiting++
		s.opts.Append(&writer.Append{Key: writer.QueueKey{Topic: RollTopic, QueueID: 0}, Records: recs, Kind: stats.KindSystem,
			Reply: func(res writer.Result) { s.self.Send(&appendDone{epoch: epoch, olds: o, sizes: z, res: res}) }})
		recs, olds, sizes = nil, nil, nil
	}
	for _, t := range timers {
		raw, err := s.opts.Store.CommitLog.ReadAt(t.CommitLogOffset, t.Size)
		if err != nil {
			// Left where it is: it keeps pinning its segment.
			s.opts.Logger.Error().Err(err).Int64("commitlog_offset", t.CommitLogOffset).
				Msg("timer message cannot be read to roll it forward")
			continue
		}
		rec, err := rollCopy(raw, nowMs)
		if err != nil {
			s.opts.Logger.Error().Err(err).Int64("commitlog_offset", t.CommitLogOffset).
				Msg("timer message cannot be copied forward")
			continue
		}
		recs, olds, sizes = append(recs, rec), append(olds, t.CommitLogOffset), append(sizes, int32(len(rec)))
		r.spent += int64(len(rec))
		if len(recs) == rollAppendRecords {
			flush()
		}
	}
	flush()
	if r.waiting == 0 {
		s.self.Send(stepMsg{epoch: r.epoch})
	}
}

// rollCopy builds the copy of a stored timer message: the same message
// (body, flags, hosts, born time, properties with its TIMER_OUT_MS and
// UNIQ_KEY) in RollTopic, stored now, with TIMER_ROLL_TIMES counted up as
// RocketMQ counts its rolls.
func rollCopy(raw []byte, nowMs int64) ([]byte, error) {
	m, _, err := message.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	props := message.DecodeProperties(m.Properties)
	n, _ := strconv.Atoi(props[message.PropTimerRollTimes])
	props[message.PropTimerRollTimes] = strconv.Itoa(n + 1)
	m.Topic, m.QueueID, m.QueueOffset, m.StoreTimestamp = RollTopic, 0, 0, nowMs
	m.Properties = message.EncodeProperties(props)
	return m.Encode(make([]byte, 0, m.EncodedSize()))
}

// appended records the writer's answer; once every append of the bucket
// is in, the copies are made durable and the bucket is rerouted.
func (s *Retention) appended(m *appendDone) {
	r := s.r
	r.progress = time.Now()
	r.waiting--
	if m.res.Err != nil && !r.rollFailed {
		// The disk may be full: give up rolling for this round, but still
		// delete what no timer holds.
		r.rollFailed = true
		s.opts.Logger.Error().Err(m.res.Err).Int64("bucket", r.bucket).
			Msg("timer copies could not be written; rolling stops for this round")
	}
	if !r.rollFailed {
		for i, old := range m.olds {
			r.relocs[old] = timerwheel.Relocation{Offset: m.res.Offsets[i], Size: m.sizes[i]}
		}
	}
	if r.waiting > 0 {
		return
	}
	if r.rollFailed {
		r.buckets = nil
		s.step()
		return
	}
	// The copies must be durable before the TimerLog refers to them.
	if err := s.opts.Store.CommitLog.Sync(); err != nil {
		s.finish(fmt.Errorf("retention: sync roll copies: %w", err))
		return
	}
	n, err := s.opts.Wheel.Reroute(r.bucket, r.relocs)
	if err != nil {
		s.finish(err)
		return
	}
	var bytes int64
	for _, rl := range r.relocs {
		bytes += int64(rl.Size)
	}
	if n < len(r.relocs) {
		// The bucket was relinked meanwhile: those timers are due soon and
		// keep their old message; the unused copies are garbage.
		s.opts.Logger.Info().Int64("bucket", r.bucket).Int("copied", len(r.relocs)).Int("rerouted", n).
			Msg("timer bucket moved while rolling; unused copies left behind")
		bytes = bytes * int64(n) / int64(len(r.relocs))
	}
	r.rolled = r.rolled || n > 0
	r.report.Rolled += n
	r.report.RolledBytes += bytes
	s.opts.Metrics.rolled(n, bytes)
	s.step()
}
