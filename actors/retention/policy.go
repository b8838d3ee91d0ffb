package retention

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Schedule says when expired segments may be deleted: always ("any"), or
// during the hour that follows each of a list of local times of day
// (RocketMQ's deleteWhen="04" is the hour 04:00-04:59; ours is "04:00").
// The window is an hour long so that a round that could not finish (the
// per-round limit, a pin that moves) goes on within it.
type Schedule struct {
	any    bool
	starts []int // minutes after local midnight
}

// windowLength is how long a deletion window stays open.
const windowLength = time.Hour

// ParseSchedule parses "any" or ";"-separated local times "HH:MM".
func ParseSchedule(s string) (Schedule, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "any") {
		return Schedule{any: true}, nil
	}
	var out Schedule
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		hh, mm, ok := strings.Cut(part, ":")
		h, err1 := strconv.Atoi(hh)
		m, err2 := strconv.Atoi(mm)
		if !ok || err1 != nil || err2 != nil || h < 0 || h > 23 || m < 0 || m > 59 || len(mm) != 2 {
			return Schedule{}, fmt.Errorf("retention time %q: want HH:MM (local time, 00:00-23:59), several separated by ';', or any", part)
		}
		out.starts = append(out.starts, h*60+m)
	}
	return out, nil
}

// String formats the schedule as ParseSchedule reads it.
func (s Schedule) String() string {
	if s.any {
		return "any"
	}
	parts := make([]string, len(s.starts))
	for i, m := range s.starts {
		parts[i] = fmt.Sprintf("%02d:%02d", m/60, m%60)
	}
	return strings.Join(parts, ";")
}

// Open reports whether t (taken in its location) falls in a deletion
// window.
func (s Schedule) Open(t time.Time) bool {
	if s.any {
		return true
	}
	now := t.Hour()*60 + t.Minute()
	for _, start := range s.starts {
		d := (now - start + 24*60) % (24 * 60)
		if time.Duration(d)*time.Minute < windowLength {
			return true
		}
	}
	return false
}

// Policy holds the rules of the retention stage (see the package
// documentation).
type Policy struct {
	// Retention is how long a segment is kept after its newest message was
	// stored (0: no limit by age; only forced cleaning deletes).
	Retention time.Duration
	// Schedule is when expired segments are deleted.
	Schedule Schedule
	// CleanRatio: above this disk use, expired segments are deleted at once,
	// outside the schedule.
	CleanRatio float64
	// ForceRatio: above this disk use, segments are deleted whatever their
	// age, oldest first.
	ForceRatio float64
	// MaxPerRound caps the segments deleted per round.
	MaxPerRound int
}

// Segment is what the policy knows of one CommitLog segment.
type Segment struct {
	// Base and End delimit the segment's offsets [Base, End).
	Base, End int64
	// NewestMs is when the segment's newest message was stored (epoch ms);
	// 0: unknown (the segment is then never expired, only forced out).
	NewestMs int64
}

// PinValue is one "still needed" offset at decision time.
type PinValue struct {
	Name   string
	Offset int64
}

// Input is everything a decision depends on.
type Input struct {
	Now time.Time
	// Segments are the CommitLog's segments, oldest first; the last one
	// is being written and is never deleted.
	Segments []Segment
	// UsedRatio is the data directory's disk use in [0, 1].
	UsedRatio float64
	// Pins are the offsets still needed: nothing at or after the lowest
	// is deleted.
	Pins []PinValue
}

// Reasons for a deletion (metric label values).
const (
	ReasonExpired = "expired" // older than the retention, in the schedule's window
	ReasonDisk    = "disk"    // older than the retention, disk use above the clean ratio
	ReasonForced  = "forced"  // disk use above the force ratio, whatever the age
)

// Decision is what a round does.
type Decision struct {
	// Reason is why the segments go ("" when nothing is wanted).
	Reason string
	// Wanted are the segments the rules would delete now, oldest first;
	// Delete is the prefix of them that no pin holds.
	Wanted, Delete []Segment
	// HeldBy names the pin that holds Wanted[len(Delete)], and HeldAt is
	// its offset; empty when nothing wanted is held.
	HeldBy string
	HeldAt int64
	// Limit is the lowest pin (math.MaxInt64 without pins).
	Limit int64
}

// Decide applies the policy: outside the schedule's window and below the
// clean ratio nothing goes; otherwise the oldest segments go while they are
// expired (or the disk is above the force ratio), at most MaxPerRound, and
// never the last segment nor one that reaches the lowest pin.
func (p Policy) Decide(in Input) Decision {
	d := Decision{Limit: math.MaxInt64}
	holder := PinValue{Offset: math.MaxInt64}
	for _, pin := range in.Pins {
		if pin.Offset < holder.Offset {
			holder = pin
		}
	}
	d.Limit = holder.Offset
	forced := in.UsedRatio >= p.ForceRatio
	inWindow := p.Schedule.Open(in.Now)
	if !forced && !inWindow && in.UsedRatio < p.CleanRatio {
		return d
	}
	nowMs := in.Now.UnixMilli()
	anyYoung := false
	for _, seg := range in.Segments[:max(len(in.Segments)-1, 0)] {
		if p.MaxPerRound > 0 && len(d.Wanted) >= p.MaxPerRound {
			break
		}
		expired := p.Retention > 0 && seg.NewestMs > 0 && nowMs-seg.NewestMs >= p.Retention.Milliseconds()
		if !expired && !forced {
			break
		}
		anyYoung = anyYoung || !expired
		d.Wanted = append(d.Wanted, seg)
		if len(d.Delete) == len(d.Wanted)-1 && seg.End <= d.Limit {
			d.Delete = append(d.Delete, seg)
		}
	}
	if len(d.Delete) < len(d.Wanted) {
		d.HeldBy, d.HeldAt = holder.Name, holder.Offset
	}
	switch {
	case len(d.Wanted) == 0:
	case anyYoung:
		d.Reason = ReasonForced
	case inWindow:
		d.Reason = ReasonExpired
	default:
		d.Reason = ReasonDisk
	}
	return d
}

// RollBelow returns the CommitLog offset below which pending timers should
// be rolled forward so that the wanted segments can go: the end of the
// wanted segments, but not beyond any other pin (those segments could not
// go anyway). It is 0 when the timer pin (named timerPin) is not what holds
// the wanted segments.
func (d Decision) RollBelow(timerPin string, pins []PinValue) int64 {
	if d.HeldBy != timerPin || len(d.Wanted) == len(d.Delete) {
		return 0
	}
	limit := d.Wanted[len(d.Wanted)-1].End
	for _, p := range pins {
		if p.Name != timerPin {
			limit = min(limit, p.Offset)
		}
	}
	if limit <= d.HeldAt {
		return 0
	}
	return limit
}
