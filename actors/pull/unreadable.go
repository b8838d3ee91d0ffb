package pull

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/corruption"
)

// Reader names a consumer of the queues in Unreadable's reports.
type Reader string

// The queue readers.
const (
	ByPull Reader = "pull"
	ByPop  Reader = "pop"
)

// Unreadable is the one rule every queue reader (pulls here, POP in
// actors/pop) applies to a unit whose record could not be read. It returns
// "" when the reader may go on past it: a damaged message under
// on-corruption=skip, reported once (the reader treats it as consumed).
// Otherwise it returns the remark of the error that stops the reader
// there, changing nothing (the next read retries): a damaged
// consume-queue unit (reported to the dispatcher, which rebuilds the
// queue), a damaged message under on-corruption=stop, or an I/O error.
func Unreadable(st *storage.Store, log zerolog.Logger, who Reader, id consumequeue.QueueID, at int64, u consumequeue.Unit,
	state storage.UnitState) string {
	l := log.With().Str("queue", id.String()).Int64("queue_offset", at).Str("reader", string(who)).
		Int64("commitlog_offset", u.Offset).Int32("size", u.Size).Str("state", state.String()).Logger()
	switch state {
	case storage.UnitRecordDamaged:
		if st.OnCorruption() == corruption.PolicySkip {
			st.ReportCorruption(l, corruption.Range{File: corruption.FileCommitLog, Path: st.CommitLog.Dir(),
				From: u.Offset, To: u.Offset + int64(u.Size) + commitlog.EntryOverhead,
				Reason: "stored message fails its checksum", Action: "skipped by " + string(who) + "s"})
			return ""
		}
		l.Error().Msg(string(who) + " stops at a damaged message (on-corruption=stop)")
		return fmt.Sprintf("message at commitlog offset %d is damaged (on-corruption=stop)", u.Offset)
	case storage.UnitDamaged:
		st.ReportDamagedUnit(id, at)
		l.Error().Msg("consume-queue unit does not lead to its message; rebuilding the queue")
		return fmt.Sprintf("consume queue %s is damaged at offset %d and being rebuilt; retry", id, at)
	default:
		l.Error().Msg("commitlog read failed")
		return fmt.Sprintf("read commitlog at offset %d failed", u.Offset)
	}
}
