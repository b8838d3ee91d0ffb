package stats

import (
	"sync/atomic"
	"time"
)

// sample is one reading of the totals.
type sample struct {
	at                                  time.Time
	put, got, found, missed, tEnq, tDeq int64
}

// rate is the per-second rate of f between two samples.
func rate(a, b sample, f func(sample) int64) float64 {
	d := b.at.Sub(a.at).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(f(b)-f(a)) / d
}

func (s *Sampler) read() sample {
	c := s.opts.Counters
	now := sample{at: s.opts.Now(), put: c.putMsgs.Load(), got: c.getMsgs.Load(), found: c.found.Load(),
		missed: c.missed.Load()}
	if s.opts.Timer != nil {
		e, d := s.opts.Timer()
		now.tEnq, now.tDeq = int64(e), int64(d)
	}
	return now
}

// sample takes a reading, trims the ring to the longest window and
// publishes a snapshot.
func (s *Sampler) sample() {
	now := s.read()
	s.ring = append(s.ring, now)
	keep := int(Windows[2]/s.opts.Every) + 1
	if len(s.ring) > keep {
		s.ring = append(s.ring[:0], s.ring[len(s.ring)-keep:]...)
	}
	s.day.roll(now)
	snap := &Snapshot{At: now.at, PutTotal: now.put, GetTotalMsgs: now.got,
		PutTodayMorning: s.day.putToday, PutYesterdayMorning: s.day.putYesterday,
		GetTodayMorning: s.day.getToday, GetYesterdayMorning: s.day.getYesterday}
	for i, w := range Windows {
		then := s.ring[max(0, len(s.ring)-1-int(w/s.opts.Every))]
		snap.Put[i] = rate(then, now, func(x sample) int64 { return x.put })
		snap.GetTransferred[i] = rate(then, now, func(x sample) int64 { return x.got })
		snap.GetFound[i] = rate(then, now, func(x sample) int64 { return x.found })
		snap.GetMiss[i] = rate(then, now, func(x sample) int64 { return x.missed })
		snap.GetTotal[i] = snap.GetFound[i] + snap.GetMiss[i]
		if i == 0 {
			snap.TimerEnqueue = rate(then, now, func(x sample) int64 { return x.tEnq })
			snap.TimerDequeue = rate(then, now, func(x sample) int64 { return x.tDeq })
		}
	}
	snap.TopicPut, snap.GroupGet = s.keys.sample(now.at, s.opts.Counters)
	s.opts.View.p.Store(snap)
}

// dayTotals keeps the totals at the last two local midnights.
type dayTotals struct {
	day                    time.Time // local date of the last reading
	putToday, putYesterday int64
	getToday, getYesterday int64
}

func (d *dayTotals) roll(now sample) {
	y, m, dd := now.at.Date()
	today := time.Date(y, m, dd, 0, 0, 0, 0, now.at.Location())
	if d.day.IsZero() {
		d.day = today
		return
	}
	if today.After(d.day) {
		d.day = today
		d.putYesterday, d.putToday = d.putToday, now.put
		d.getYesterday, d.getToday = d.getToday, now.got
	}
}

// keyRings holds the recent readings of every per-topic and per-group
// counter, for rates over keyWindow.
type keyRings struct {
	size   int
	times  []time.Time
	topics map[string][]int64
	groups map[GroupTopic][]int64
}

func newKeyRings(size int) *keyRings {
	return &keyRings{size: size, topics: map[string][]int64{}, groups: map[GroupTopic][]int64{}}
}

// sample reads every key and returns the rates over the ring's span.
func (k *keyRings) sample(at time.Time, c *Counters) (map[string]float64, map[GroupTopic]float64) {
	k.times = append(k.times, at)
	trim := len(k.times) > k.size
	if trim {
		k.times = k.times[1:]
	}
	span := at.Sub(k.times[0]).Seconds()
	topics := map[string]float64{}
	c.topics.Range(func(key, v any) bool {
		name := key.(string)
		k.topics[name] = push(k.topics[name], v.(*atomic.Int64).Load(), len(k.times), trim)
		topics[name] = ringRate(k.topics[name], span)
		return true
	})
	groups := map[GroupTopic]float64{}
	c.groups.Range(func(key, v any) bool {
		gt := key.(GroupTopic)
		k.groups[gt] = push(k.groups[gt], v.(*atomic.Int64).Load(), len(k.times), trim)
		groups[gt] = ringRate(k.groups[gt], span)
		return true
	})
	return topics, groups
}

// push appends a reading to a key's ring of n readings; a key first seen
// now is back-filled with 0, its count before its counter existed.
func push(r []int64, v int64, n int, trim bool) []int64 {
	if r == nil {
		r = make([]int64, n-1, n)
	} else if trim {
		r = r[1:]
	}
	return append(r, v)
}

func ringRate(r []int64, span float64) float64 {
	if len(r) < 2 || span <= 0 {
		return 0
	}
	return float64(r[len(r)-1]-r[0]) / span
}
