// Package schedule parses and computes recurring timer schedules: the
// WHEEL_SCHEDULE property of a timer message (docs/timer.md, "Recurring
// timers"). A schedule is either a fixed interval or a cron expression in
// an IANA time zone; Next gives the fire after a given one, so the whole
// series is a pure function of the text and the first fire time, and a
// recovered broker or a promoted replica computes the same fires.
//
// Grammar (the property's value, leading and trailing blanks ignored):
//
//	schedule = every | cron
//	every    = "@every" blank duration            ; Go duration: 1s, 90s, 1h30m, 250ms
//	cron     = [ ("CRON_TZ=" | "TZ=") zone blank ] (fields | descriptor)
//	fields   = [ second blank ] minute blank hour blank dom blank month blank dow
//	descriptor = "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly"
//
// Five fields start at the minute (second 0), six at the second; a field
// is *, a value, a range a-b, a step */n or a-b/n, or a comma-separated
// list; months and weekdays take names (JAN, MON). Without a zone a cron
// schedule is in UTC. Parsing is github.com/robfig/cron/v3's; Next runs
// robfig's search on wall-clock times (in UTC, where no clock changes)
// and maps them to instants one stretch of constant offset at a time,
// with the rules below.
//
// Daylight saving: a wall time skipped by a spring-forward change does not
// fire that day (30 2 * * * in America/New_York does not fire on the
// second Sunday of March); a wall time repeated by a fall-back change
// fires once, at its first instant: a fire whose wall-clock time is not
// after the previous fire's (for the first fire, the send's) wall-clock
// time is skipped, however many such fires the repeated span holds. An
// @every interval is absolute time and ignores zones.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Property names (message properties of a schedule's messages).
const (
	// Prop is the schedule text, set by the producer.
	Prop = "WHEEL_SCHEDULE"
	// PropSeq is the fire's sequence number, 1 for the first fire.
	PropSeq = "WHEEL_SCHEDULE_SEQ"
	// PropFireMs is the fire's scheduled time (epoch ms), on a fired message.
	PropFireMs = "WHEEL_SCHEDULE_FIRE_MS"
	// PropOrigin is the message id (UNIQ_KEY) of the schedule's original
	// message, on a fired message (whose own UNIQ_KEY is new per fire).
	PropOrigin = "WHEEL_SCHEDULE_ORIGIN"
	// PropOf is the schedule text on a fired message, which does not carry
	// Prop: a fire that is sent again (a consumer's retry through
	// send-back, a forward, a dead-letter resend) is an ordinary message,
	// never a new schedule.
	PropOf = "WHEEL_SCHEDULE_OF"
	// PropPrevMs marks a schedule's next-fire record in the timer topic,
	// written back when the fire before it (due at this time) fired.
	PropPrevMs = "WHEEL_SCHEDULE_PREV_MS"
)

// DefaultMinInterval is the shortest accepted interval between two fires.
const DefaultMinInterval = time.Second

// checkedFires is how many fires Parse examines for the minimum interval
// and whether a cron expression fires at all.
const checkedFires = 64

// ErrInvalid marks every refusal of Parse.
var ErrInvalid = errors.New("invalid schedule")

// Schedule is a parsed schedule.
type Schedule struct {
	text  string
	every time.Duration // > 0: an @every schedule
	spec  cron.Schedule // matched in UTC against wall-clock times (newCron)
	loc   *time.Location
}

var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse parses text and checks that it fires, with at least minInterval
// between two fires (checked over the first fires after nowMs for a cron
// expression). Errors wrap ErrInvalid and say what is wrong.
func Parse(text string, minInterval time.Duration, nowMs int64) (*Schedule, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, fmt.Errorf("%w: empty %s", ErrInvalid, Prop)
	}
	if rest, ok := strings.CutPrefix(t, "@every"); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil || strings.TrimSpace(rest) == rest {
			return nil, fmt.Errorf("%w: %q: @every needs a duration such as 5s or 1h30m", ErrInvalid, text)
		}
		if d < minInterval {
			return nil, fmt.Errorf("%w: %q: the interval %s is below the minimum %s", ErrInvalid, text, d, minInterval)
		}
		if d%time.Millisecond != 0 {
			return nil, fmt.Errorf("%w: %q: the interval must be whole milliseconds", ErrInvalid, text)
		}
		return &Schedule{text: t, every: d}, nil
	}
	loc := time.UTC
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(t, p); ok {
			zone, _, _ := strings.Cut(rest, " ")
			l, err := time.LoadLocation(zone)
			if err != nil || zone == "" || strings.EqualFold(zone, "local") {
				return nil, fmt.Errorf("%w: %q: unknown time zone %q (an IANA name such as Europe/Berlin)", ErrInvalid, text, zone)
			}
			loc = l
		}
	}
	spec, err := parser.Parse(t)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalid, text, err)
	}
	s, err := newCron(t, spec, loc)
	if err != nil {
		return nil, err
	}
	prev := s.Next(nowMs)
	if prev == 0 {
		return nil, fmt.Errorf("%w: %q never fires", ErrInvalid, text)
	}
	for range checkedFires {
		next := s.Next(prev)
		if next == 0 {
			break
		}
		if gap := time.Duration(next-prev) * time.Millisecond; gap < minInterval {
			return nil, fmt.Errorf("%w: %q fires %s apart, below the minimum %s", ErrInvalid, text, gap, minInterval)
		}
		prev = next
	}
	return s, nil
}

// String returns the schedule's text.
func (s *Schedule) String() string { return s.text }

// Every returns the interval of an @every schedule (0 for a cron one).
func (s *Schedule) Every() time.Duration { return s.every }

// Next returns the first fire strictly after afterMs (epoch ms), 0 when
// there is none (a cron expression that never matches again). For an
// @every schedule that is afterMs + the interval: a series started at its
// first fire F fires at F + k*interval. For a cron expression it is the
// next matching wall time in the schedule's zone, with the daylight-saving
// rules of the package comment: the earliest instant after afterMs whose
// wall-clock time matches and is after afterMs's wall-clock time.
//
// The expression is matched against wall-clock times alone (robfig's
// search run in UTC, where no clock changes), one stretch of constant
// offset at a time: within a stretch the wall clock runs with real time,
// so the smallest matching wall time in its range is its earliest fire.
// (robfig's search in the zone itself adds whole hours and truncates
// absolute time to the minute, and so misses wall times after a change
// that is not a whole hour: 02:00 after Lord Howe's fall back from 02:00
// to 01:30.)
func (s *Schedule) Next(afterMs int64) int64 {
	if s.every > 0 {
		return afterMs + s.every.Milliseconds()
	}
	after := time.UnixMilli(afterMs).In(s.loc)
	w0 := wallOf(after)
	t := after
	for range maxStretches {
		_, off := t.Zone()
		shift := time.Duration(off) * time.Second
		from := w0
		if first := wallOf(t).Add(-time.Second); first.After(from) {
			from = first // robfig looks from the next whole second on
		}
		w := s.spec.Next(from)
		if w.IsZero() {
			return 0
		}
		_, end := t.ZoneBounds()
		if end.IsZero() || w.Before(end.UTC().Add(shift)) {
			return w.Add(-shift).UnixMilli()
		}
		t = end.In(s.loc) // no match before the next change: look on from it
	}
	return 0
}

// maxStretches bounds the stretches of constant offset Next looks
// through: two a year in most zones, and robfig gives up after five years.
const maxStretches = 64

// wallOf is the wall-clock reading of t in its zone, as a UTC time.
func wallOf(t time.Time) time.Time {
	_, off := t.Zone()
	return t.UTC().Add(time.Duration(off) * time.Second)
}

// newCron makes a cron schedule of a parsed expression in loc: the
// expression is matched against wall-clock times in UTC (see Next).
func newCron(text string, spec cron.Schedule, loc *time.Location) (*Schedule, error) {
	if cd, ok := spec.(cron.ConstantDelaySchedule); ok {
		// "CRON_TZ=... @every d": an interval, whatever the zone (robfig's
		// delay is whole seconds).
		return &Schedule{text: text, every: cd.Delay}, nil
	}
	sp, ok := spec.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a cron expression", ErrInvalid, text)
	}
	inUTC := *sp
	inUTC.Location = time.UTC
	return &Schedule{text: text, spec: &inUTC, loc: loc}, nil
}
