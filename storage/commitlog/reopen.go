package commitlog

import "fmt"

// ReopenInfo describes what Reopen found.
type ReopenInfo struct {
	// PreviousMaxOffset is MaxOffset before the reopen: what readers may
	// have seen.
	PreviousMaxOffset int64
	// MaxOffset is MaxOffset after the reopen (the recovered end).
	MaxOffset int64
	// Cause is the sticky error the log was failed with (nil when it was
	// not failed).
	Cause error
	// Recovery is what the tail recovery verified and cut.
	Recovery RecoveryInfo
}

// Lost reports whether recovery cut bytes that readers could already see
// (MaxOffset went down): consume queues built on them must be realigned,
// which Store.Open does at the next process start.
func (i ReopenInfo) Lost() bool { return i.MaxOffset < i.PreviousMaxOffset }

// Failed returns the sticky error after a failed fsync or rollback (the log
// then refuses writes until Reopen), or nil while the log takes writes. Safe
// from any goroutine.
func (c *CommitLog) Failed() error { return c.failure() }

// Reopen recovers the log in place, as a process restart would, without
// closing it for its readers: it opens the segment files again with new
// handles, runs the tail recovery of Open on them (from the segment holding
// FlushedOffset, cutting a torn or corrupt tail), swaps them in, closes the
// old handles and clears the sticky error. It is meant for a log that
// Failed, and works on a healthy one too.
//
// The caller is the writer: Reopen must not run concurrently with Append.
// It may run concurrently with readers (they hold the segment set's read
// lock for each pread, so the old handles are closed only when no read is
// using them) and with Sync (serialized by the sync lock).
//
// When Reopen fails the log is left as it was (failed, readable).
func (c *CommitLog) Reopen() (ReopenInfo, error) {
	if c.closed.Load() {
		return ReopenInfo{}, fmt.Errorf("commitlog reopen %s: %w", c.dir, ErrClosed)
	}
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	info := ReopenInfo{PreviousMaxOffset: c.maxOffset.Load(), Cause: c.failure()}
	fresh := &CommitLog{dir: c.dir, segSize: c.segSize, fs: c.fs, log: c.log}
	if err := fresh.openSegments(); err != nil {
		_ = fresh.closeFiles()
		return info, fmt.Errorf("commitlog reopen: %w", err)
	}
	if len(fresh.segs.list) == 0 {
		// Every segment file vanished under us: start again at the old
		// first offset rather than at 0, so that offsets are not reused.
		s, err := fresh.createSegment(c.MinOffset())
		if err != nil {
			return info, fmt.Errorf("commitlog reopen %s: %w", c.dir, err)
		}
		fresh.segs.list = append(fresh.segs.list, s)
	}
	if err := fresh.recover(max(c.flushed.Load(), 1)); err != nil {
		_ = fresh.closeFiles()
		return info, fmt.Errorf("commitlog reopen: %w", err)
	}
	info.MaxOffset = fresh.w.pos
	info.Recovery = fresh.recovery

	c.segs.Lock()
	old := c.segs.list
	c.segs.list = fresh.segs.list
	c.minOffset.Store(c.segs.list[0].base)
	c.w.pos, c.w.seg = fresh.w.pos, fresh.w.seg
	c.maxOffset.Store(fresh.w.pos)
	c.flushed.Store(fresh.w.pos) // recover fsynced what it kept
	// Under the write lock no reader holds an old handle (see pin).
	if err := closeSegments(old); err != nil {
		c.log.Warn().Err(err).Str("dir", c.dir).Msg("commitlog: closing the old segment handles after reopen")
	}
	c.segs.Unlock()

	c.fail.Lock()
	c.fail.err = nil
	c.fail.Unlock()
	c.log.Info().Str("dir", c.dir).AnErr("cause", info.Cause).Int64("previous_max_offset", info.PreviousMaxOffset).
		Int64("max_offset", info.MaxOffset).Int64("truncated_at", info.Recovery.TruncatedAt).
		Msg("commitlog: reopened")
	return info, nil
}
