package commitlog

import "time"

// SegmentCount returns the number of segment files. Safe from any
// goroutine.
func (c *CommitLog) SegmentCount() int { return c.segmentCount() }

// SetSyncObserver sets f to be called after every Sync that fsynced data,
// with the time the fsyncs took (nil: none). Sync calls that find nothing
// to flush are not observed. f runs on the syncing goroutine and must be
// quick (a histogram observation). Safe from any goroutine.
func (c *CommitLog) SetSyncObserver(f func(time.Duration)) {
	if f == nil {
		c.syncObserver.Store(nil)
		return
	}
	c.syncObserver.Store(&f)
}

// observeSync reports one fsync round to the observer.
func (c *CommitLog) observeSync(d time.Duration) {
	if f := c.syncObserver.Load(); f != nil {
		(*f)(d)
	}
}
