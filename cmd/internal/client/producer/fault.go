package producer

import (
	"sync"
	"sync/atomic"
	"time"
)

// The latency fault tolerance table (RocketMQ 5's MQFaultStrategy): a send
// that took at least latencyMax[i] makes its broker unavailable for
// notAvailableDuration[i].
var (
	latencyMax           = [...]time.Duration{50, 100, 550, 1800, 3000, 5000, 15000}
	notAvailableDuration = [...]time.Duration{0, 0, 2000, 5000, 6000, 10000, 30000}
)

// NotAvailableFor returns how long a broker is avoided after a send that
// took latency: the duration of the largest latency step reached (in
// milliseconds: 50, 100, 550, 1800, 3000, 5000, 15000 map to 0, 0, 2000,
// 5000, 6000, 10000, 30000), or 0 below the first step.
func NotAvailableFor(latency time.Duration) time.Duration {
	for i := len(latencyMax) - 1; i >= 0; i-- {
		if latency >= latencyMax[i]*time.Millisecond {
			return notAvailableDuration[i] * time.Millisecond
		}
	}
	return 0
}

// faultTable records, per broker name, until when it is avoided.
type faultTable struct {
	items sync.Map // broker name -> *faultItem
}

// faultItem is one broker's state.
type faultItem struct {
	until atomic.Int64 // unix nanoseconds before which the broker is avoided
}

// update records a send to broker that took latency; a failed send
// (isolate) avoids the broker for IsolationDuration.
func (f *faultTable) update(broker string, latency time.Duration, isolate bool, now time.Time) {
	d := NotAvailableFor(latency)
	if isolate {
		d = IsolationDuration
	}
	v, ok := f.items.Load(broker)
	if !ok {
		if d == 0 {
			return // nothing to remember for a fast send to an unknown broker
		}
		v, _ = f.items.LoadOrStore(broker, new(faultItem))
	}
	v.(*faultItem).until.Store(now.Add(d).UnixNano())
}

// available reports whether broker may be used at now.
func (f *faultTable) available(broker string, now time.Time) bool {
	v, ok := f.items.Load(broker)
	return !ok || now.UnixNano() >= v.(*faultItem).until.Load()
}

// soonest returns the broker of queues that becomes available first,
// preferring any broker other than avoid; "" when queues is empty.
func (f *faultTable) soonest(queues []Queue, avoid string) string {
	best, bestUntil := "", int64(0)
	for pass := range 2 {
		for _, q := range queues {
			if pass == 0 && q.Broker == avoid {
				continue
			}
			var until int64
			if v, ok := f.items.Load(q.Broker); ok {
				until = v.(*faultItem).until.Load()
			}
			if best == "" || until < bestUntil {
				best, bestUntil = q.Broker, until
			}
		}
		if best != "" {
			return best
		}
	}
	return best
}
