// Package rates keeps the broker's rates over the last hour in memory:
// a supervised stage (the sampler, stage.go) reads the cumulative counters
// and gauges every Every (10 s by default) into fixed-size rings (Rings,
// 361 readings by default: 360 intervals, one hour), and Series turns
// consecutive readings into exact per-second rates. Memory is bounded by
// construction: the rings are allocated once, and the per-stage rings are
// capped at MaxStages names. No external database.
package rates

import (
	"sort"
	"sync"
	"time"
)

// Sample is one reading of the broker's counters (cumulative, since the
// start) and gauges (the value at At).
type Sample struct {
	At time.Time
	// MsgsIn counts client sends stored (wheelmq_messages_in_total);
	// Internal the records the broker stored for itself: timer
	// write-backs, retries, DLQ moves, POP journal, transaction ends,
	// system records (wheelmq_stored_records_total without kind=client).
	MsgsIn, Internal int64
	// OutPull and OutPop count messages handed to consumers by protocol
	// (wheelmq_messages_out_total: pop is remoting POP and every gRPC
	// consumer).
	OutPull, OutPop int64
	// BytesIn counts the bytes of client sends stored, BytesOut the bytes
	// handed to consumers.
	BytesIn, BytesOut int64
	// TimersFired counts timer messages written back
	// (wheelmq_timer_delivered_total); PopDeadlines POP invisibility
	// deadlines reached (wheelmq_timer_pop_deadlines_total).
	TimersFired, PopDeadlines int64
	// Gauges: timers waiting in the wheel, POP deliveries in flight, open
	// remoting connections.
	TimersPending, PopInflight, Connections int64
}

// StageCount is one stage's messages processed (cumulative).
type StageCount struct {
	Name      string
	Processed uint64
}

// Reading is what the sampler reads every period.
type Reading struct {
	Sample
	Stages []StageCount
}

// DefaultEvery is the default sampling period and DefaultSize the default
// ring size: 360 intervals of 10 s, one hour.
const (
	DefaultEvery = 10 * time.Second
	DefaultSize  = 361
)

// MaxStages caps the stage names kept (a broker has about 30); a name
// beyond it is not recorded.
const MaxStages = 128

// Rings are the last Size readings; safe from any goroutine.
type Rings struct {
	every time.Duration
	mu    sync.Mutex
	ring  []Sample              // fixed length Size, circular; guarded by mu
	seq   int64                 // readings added so far; guarded by mu
	stage map[string]*stageRing // by stage name, at most MaxStages; guarded by mu
}

// stageRing is one stage's processed counts, aligned with Rings.ring.
type stageRing struct {
	v     []uint64 // fixed length Size
	first int64    // the seq of its first reading
	last  int64    // the seq of its last reading
}

// NewRings makes rings of size readings (DefaultSize when < 2) taken every
// every (DefaultEvery when <= 0).
func NewRings(size int, every time.Duration) *Rings {
	if size < 2 {
		size = DefaultSize
	}
	if every <= 0 {
		every = DefaultEvery
	}
	return &Rings{every: every, ring: make([]Sample, size), stage: map[string]*stageRing{}}
}

// Size is the number of readings kept.
func (r *Rings) Size() int { return len(r.ring) }

// Every is the sampling period.
func (r *Rings) Every() time.Duration { return r.every }

// Add records a reading, replacing the oldest once the rings are full.
func (r *Rings) Add(x Reading) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := int64(len(r.ring))
	i := r.seq % n
	r.ring[i] = x.Sample
	for _, s := range x.Stages {
		sr := r.stage[s.Name]
		if sr == nil {
			if len(r.stage) >= MaxStages {
				continue
			}
			sr = &stageRing{v: make([]uint64, n), first: r.seq}
			r.stage[s.Name] = sr
		}
		if sr.last != r.seq-1 && sr.first != r.seq { // a gap: start again
			sr.first = r.seq
		}
		sr.v[i], sr.last = s.Processed, r.seq
	}
	r.seq++
}

// Point is one point of a series: a rate over the interval ending at At,
// or a gauge's value at At.
type Point struct {
	At time.Time
	V  float64
}

// Series is one line of a chart.
type Series struct {
	// Name is stable: msgs_in, internal_in, out_pull, out_pop, bytes_in,
	// bytes_out, timers_fired, pop_deadlines (rates per second),
	// timers_pending, pop_inflight, connections (gauges), and
	// stage:<name> (messages processed per second).
	Name  string
	Gauge bool
	// Points are oldest first: one per interval between consecutive
	// readings for a rate, one per reading for a gauge.
	Points []Point
}

// field reads one figure of a sample.
type field struct {
	name  string
	gauge bool
	get   func(*Sample) int64
}

var fields = []field{
	{"msgs_in", false, func(s *Sample) int64 { return s.MsgsIn }},
	{"internal_in", false, func(s *Sample) int64 { return s.Internal }},
	{"out_pull", false, func(s *Sample) int64 { return s.OutPull }},
	{"out_pop", false, func(s *Sample) int64 { return s.OutPop }},
	{"bytes_in", false, func(s *Sample) int64 { return s.BytesIn }},
	{"bytes_out", false, func(s *Sample) int64 { return s.BytesOut }},
	{"timers_fired", false, func(s *Sample) int64 { return s.TimersFired }},
	{"pop_deadlines", false, func(s *Sample) int64 { return s.PopDeadlines }},
	{"timers_pending", true, func(s *Sample) int64 { return s.TimersPending }},
	{"pop_inflight", true, func(s *Sample) int64 { return s.PopInflight }},
	{"connections", true, func(s *Sample) int64 { return s.Connections }},
}

// rate is the per-second rate from a to b over dt; a counter that went
// down restarted from zero (as Prometheus's rate() takes it).
func rate(a, b uint64, dt time.Duration) float64 {
	if dt <= 0 {
		return 0
	}
	d := b - a
	if b < a {
		d = b
	}
	return float64(d) / dt.Seconds()
}

// Series returns every series over the readings kept, figures first (in
// the order of Series.Name's list), then the stages by name.
func (r *Rings) Series() []Series {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := int64(len(r.ring))
	from := max(r.seq-n, 0)
	at := func(seq int64) *Sample { return &r.ring[seq%n] }
	out := make([]Series, 0, len(fields)+len(r.stage))
	for _, f := range fields {
		s := Series{Name: f.name, Gauge: f.gauge}
		for q := from; q < r.seq; q++ {
			cur := at(q)
			if f.gauge {
				s.Points = append(s.Points, Point{At: cur.At, V: float64(f.get(cur))})
				continue
			}
			if q == from {
				continue
			}
			prev := at(q - 1)
			s.Points = append(s.Points, Point{At: cur.At, V: rate(uint64(f.get(prev)), uint64(f.get(cur)), cur.At.Sub(prev.At))})
		}
		out = append(out, s)
	}
	names := make([]string, 0, len(r.stage))
	for name := range r.stage {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sr := r.stage[name]
		s := Series{Name: "stage:" + name}
		if sr.last == r.seq-1 { // still read: its points since its first kept reading
			for q := max(sr.first, from) + 1; q < r.seq; q++ {
				cur, prev := at(q), at(q-1)
				s.Points = append(s.Points, Point{At: cur.At, V: rate(sr.v[(q-1)%n], sr.v[q%n], cur.At.Sub(prev.At))})
			}
		}
		out = append(out, s)
	}
	return out
}
