// Package corruption is how wheelmq's stores deal with damaged bytes found
// while the broker runs: the policy (skip the damage and go on, or stop),
// the error a stop carries, and the report of what was skipped (the
// Prometheus counter wheelmq_store_corrupt_bytes_total and one zerolog event
// per damaged range).
//
// The readers that meet damage are the owners of each file: the dispatch
// stage for the CommitLog and the consume queues (a damaged consume queue
// is rebuilt from the CommitLog), the timer store for the TimerLog. With
// PolicySkip they report the range and go on past it; with PolicyStop they
// fail with an error wrapping ErrStop, which the supervisor treats as fatal.
//
// This package is a leaf: it knows no file format.
package corruption

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Policy says what a reader does with damaged bytes.
type Policy uint8

const (
	// PolicySkip (the default) reports the damaged range, counts its bytes
	// and goes on with the next valid record.
	PolicySkip Policy = iota
	// PolicyStop fails with an error wrapping ErrStop: the stage stops and
	// an operator looks at the files (wheelctl store verify / dump).
	PolicyStop
)

// String returns "skip" or "stop".
func (p Policy) String() string {
	switch p {
	case PolicySkip:
		return "skip"
	case PolicyStop:
		return "stop"
	default:
		return fmt.Sprintf("policy(%d)", uint8(p))
	}
}

// ParsePolicy parses "skip" or "stop" (case-insensitive).
func ParsePolicy(s string) (Policy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "skip":
		return PolicySkip, nil
	case "stop":
		return PolicyStop, nil
	}
	return PolicySkip, fmt.Errorf("on-corruption %q: want skip or stop: %w", s, ErrInvalidPolicy)
}

// Set implements flag.Value (and pflag.Value).
func (p *Policy) Set(s string) error {
	v, err := ParsePolicy(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Type implements pflag.Value.
func (p *Policy) Type() string { return "skip|stop" }

var (
	// ErrStop is wrapped by the error a reader fails with when it meets
	// damage under PolicyStop. Supervisors list it as fatal.
	ErrStop = errors.New("corruption found and on-corruption is stop")
	// ErrInvalidPolicy means a policy name other than skip or stop.
	ErrInvalidPolicy = errors.New("corruption: invalid policy")
)

// File names the store a damaged range belongs to; it is the value of the
// metric's "file" label.
const (
	FileCommitLog    = "commitlog"
	FileConsumeQueue = "consumequeue"
	FileTimerLog     = "timerlog"
)

// Range is one damaged span of a store.
type Range struct {
	// File is FileCommitLog, FileConsumeQueue or FileTimerLog.
	File string
	// Path is the file (or queue) holding the damage, for the log.
	Path string
	// From and To delimit the damaged bytes [From, To) in the store's own
	// address space: global CommitLog offsets, the byte position in a
	// consume queue (unit index * 20), or a TimerLog byte position.
	From, To int64
	// Reason says what failed (checksum, size, magic, ...).
	Reason string
	// Action says what the reader does about it ("skipped", "rebuilt", ...).
	Action string
}

// Bytes is the size of the range.
func (r Range) Bytes() int64 { return max(r.To-r.From, 0) }

// maxSeen bounds the ranges remembered for de-duplication; past it every
// report is counted again (damage that large is an operator's problem).
const maxSeen = 1 << 16

// Metrics counts damaged bytes skipped, once per range. A nil *Metrics is
// valid: reports are logged but not counted.
type Metrics struct {
	// Bytes is wheelmq_store_corrupt_bytes_total{file}.
	Bytes *prometheus.CounterVec

	mu     sync.Mutex
	seen   map[rangeKey]struct{} // guarded by mu
	totals map[string]int64      // bytes counted per file; guarded by mu
}

type rangeKey struct {
	file, path string
	from       int64
}

// NewMetrics creates the counter and registers it with reg (nil: not
// registered). One instance is shared by every store of a broker.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wheelmq_store_corrupt_bytes_total",
			Help: "Damaged bytes skipped by the store's readers (checksum or format failures), by file: commitlog, consumequeue, timerlog.",
		}, []string{"file"}),
		seen:   map[rangeKey]struct{}{},
		totals: map[string]int64{},
	}
	for _, f := range []string{FileCommitLog, FileConsumeQueue, FileTimerLog} {
		m.Bytes.WithLabelValues(f) // export zeros
	}
	if reg != nil {
		reg.MustRegister(m.Bytes)
	}
	return m
}

// Report counts r's bytes (once per File, Path and From) and logs it at
// error level with its fields. It returns whether the range was new.
func (m *Metrics) Report(log zerolog.Logger, r Range) bool {
	first := m.note(r)
	ev := log.Error()
	if !first {
		ev = log.Debug()
	}
	ev.Str("file", r.File).Str("path", r.Path).Int64("from", r.From).Int64("to", r.To).
		Int64("bytes", r.Bytes()).Str("reason", r.Reason).Str("action", r.Action).
		Msg("store corruption")
	return first
}

func (m *Metrics) note(r Range) bool {
	if m == nil {
		return true
	}
	m.mu.Lock()
	k := rangeKey{file: r.File, path: r.Path, from: r.From}
	_, dup := m.seen[k]
	if !dup {
		if len(m.seen) < maxSeen {
			m.seen[k] = struct{}{}
		}
		m.totals[r.File] += r.Bytes()
	}
	m.mu.Unlock()
	if dup {
		return false
	}
	m.Bytes.WithLabelValues(r.File).Add(float64(r.Bytes()))
	return true
}

// Counted returns the bytes counted so far for file (tests and tools).
func (m *Metrics) Counted(file string) int64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.totals[file]
}
