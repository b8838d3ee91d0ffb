package stats

import (
	"sync/atomic"
	"time"
)

// PutTimeBounds are the upper bounds of RocketMQ's put-message time
// distribution (StoreStatsService's putMessageDistributeTime: <=0 ms,
// 0~10 ms, 10~50 ms, ..., 5~10 s, 10 s and more), the buckets
// rocketmq-exporter publishes as rocketmq_brokeruntime_pmdt_*.
var PutTimeBounds = []time.Duration{0, 10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	200 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second,
	4 * time.Second, 5 * time.Second, 10 * time.Second}

// PutTimeNames are the exporter's names of the buckets, one more than
// PutTimeBounds (the last: 10 s and more).
var PutTimeNames = []string{"0ms", "0to10ms", "10to50ms", "50to100ms", "100to200ms", "200to500ms", "500to1s",
	"1to2s", "2to3s", "3to4s", "4to5s", "5to10s", "10stomore"}

// putTimes counts stored records by how long the commitlog writer took to
// store them (from taking their batch to answering it, the fsync of a
// synchronous flush included).
type putTimes [13]atomic.Int64

// PutTime counts records stored in d.
func (c *Counters) PutTime(d time.Duration, records int) {
	i := len(PutTimeBounds)
	for j, b := range PutTimeBounds {
		if d <= b {
			i = j
			break
		}
	}
	c.put[i].Add(int64(records))
}

// PutTimes returns the records stored by bucket of PutTimeNames, since the
// start.
func (c *Counters) PutTimes() []int64 {
	out := make([]int64, len(c.put))
	for i := range c.put {
		out[i] = c.put[i].Load()
	}
	return out
}
