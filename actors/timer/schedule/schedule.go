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
// schedule is in UTC. Parsing is github.com/robfig/cron/v3's; Next is
// robfig's with the fall-back rule below.
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
	spec  cron.Schedule
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
	s := &Schedule{text: t, spec: spec, loc: loc}
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
// rules of the package comment.
func (s *Schedule) Next(afterMs int64) int64 {
	if s.every > 0 {
		return afterMs + s.every.Milliseconds()
	}
	after := time.UnixMilli(afterMs).In(s.loc)
	wall := wallOf(after)
	t := after
	for range 8 { // one jump per clock change met, a few at most
		t = s.spec.Next(t)
		if t.IsZero() {
			return 0
		}
		w := wallOf(t)
		if w > wall {
			return t.UnixMilli()
		}
		// t is in a repeated span: its wall time came before. The clock
		// runs with real time there, so it is back at wall after wall-w
		// seconds, unless the zone changes again before: search on from
		// the earlier of the two (not fire by fire: an every-second
		// schedule across an hour's fall back has 3600 fires to skip).
		back := t.Add(time.Duration(wall-w) * time.Second)
		if _, end := t.ZoneBounds(); !end.IsZero() && end.Before(back) {
			back = end.Add(-time.Second) // Next looks from the next second on
		}
		t = back
	}
	return 0
}

// wallOf is a wall-clock time as a comparable number (its UTC reading of
// the local fields), in seconds.
func wallOf(t time.Time) int64 {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	return time.Date(y, mo, d, h, mi, sec, 0, time.UTC).Unix()
}
