package schedule

import (
	"errors"
	"testing"
	"time"
)

func at(t *testing.T, zone, wall string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04:05", wall, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fires returns the n fires after from.
func fires(t *testing.T, text string, from time.Time, n int) []time.Time {
	t.Helper()
	s, err := Parse(text, time.Second, from.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	ms := from.UnixMilli()
	for range n {
		ms = s.Next(ms)
		if ms == 0 {
			t.Fatalf("%q: no fire after %v", text, out)
		}
		out = append(out, time.UnixMilli(ms))
	}
	return out
}

func expect(t *testing.T, got []time.Time, want ...time.Time) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d fires, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Errorf("fire %d: got %s, want %s", i+1, got[i].UTC(), want[i].UTC())
		}
	}
}

func TestEveryIsAbsolute(t *testing.T) {
	from := at(t, "America/New_York", "2026-03-08 01:59:59")
	got := fires(t, "@every 1s", from, 2)
	expect(t, got, from.Add(time.Second), from.Add(2*time.Second))
	got = fires(t, " @every 1h30m ", from, 1)
	expect(t, got, from.Add(90*time.Minute))
}

// A daily 02:30 in New York: 2026-03-08 has no 02:30 (spring forward at
// 02:00 -> 03:00): that day is skipped.
func TestSpringForwardSkips(t *testing.T) {
	from := at(t, "America/New_York", "2026-03-07 12:00:00")
	got := fires(t, "CRON_TZ=America/New_York 30 2 * * *", from, 2)
	expect(t, got, at(t, "America/New_York", "2026-03-09 02:30:00"), at(t, "America/New_York", "2026-03-10 02:30:00"))
}

// Hourly across the spring-forward gap in Berlin (2026-03-29 02:00 CET ->
// 03:00 CEST): 01:00, 03:00, 04:00, one real hour apart each.
func TestSpringForwardHourly(t *testing.T) {
	from := at(t, "Europe/Berlin", "2026-03-29 00:30:00")
	got := fires(t, "TZ=Europe/Berlin 0 * * * *", from, 3)
	expect(t, got, at(t, "Europe/Berlin", "2026-03-29 01:00:00"), at(t, "Europe/Berlin", "2026-03-29 03:00:00"),
		at(t, "Europe/Berlin", "2026-03-29 04:00:00"))
	if d := got[1].Sub(got[0]); d != time.Hour {
		t.Fatalf("01:00 -> 03:00 CEST is %s of real time, want 1h", d)
	}
}

// A daily 01:30 in New York on 2026-11-01, when 01:00-02:00 happens twice
// (EDT, then EST): it fires once, at the first 01:30 (EDT).
func TestFallBackFiresOnce(t *testing.T) {
	ny := "America/New_York"
	from := at(t, ny, "2026-10-31 12:00:00")
	got := fires(t, "CRON_TZ="+ny+" 30 1 * * *", from, 3)
	first := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC) // 01:30 EDT = 05:30 UTC
	expect(t, got, first, at(t, ny, "2026-11-02 01:30:00"), at(t, ny, "2026-11-03 01:30:00"))
	// Every 15 minutes in the repeated hour: 01:00..01:45 EDT once, then 02:00 EST.
	from = time.Date(2026, 11, 1, 4, 50, 0, 0, time.UTC) // 00:50 EDT
	got = fires(t, "CRON_TZ="+ny+" */15 * * * *", from, 6)
	base := time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC)
	expect(t, got, base, base.Add(15*time.Minute), base.Add(30*time.Minute), base.Add(45*time.Minute),
		time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 7, 15, 0, 0, time.UTC))
	// Started inside the second 01:xx (EST), the series goes on from there.
	from = time.Date(2026, 11, 1, 6, 10, 0, 0, time.UTC) // 01:10 EST
	got = fires(t, "CRON_TZ="+ny+" */15 * * * *", from, 2)
	expect(t, got, time.Date(2026, 11, 1, 6, 15, 0, 0, time.UTC), time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC))
}

// An @every after a zone is the interval, zone or not.
func TestEveryAfterZone(t *testing.T) {
	from := at(t, "America/New_York", "2026-11-01 01:59:58")
	expect(t, fires(t, "CRON_TZ=America/New_York @every 2s", from, 2), from.Add(2*time.Second), from.Add(4*time.Second))
}

func TestSixFieldsAndUTCDefault(t *testing.T) {
	from := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	expect(t, fires(t, "*/2 * * * * *", from, 2), from.Add(2*time.Second), from.Add(4*time.Second))
	expect(t, fires(t, "0 9 * * *", from, 1), from.AddDate(0, 0, 1))
	expect(t, fires(t, "@daily", from, 1), time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
}

func TestParseRefusals(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC).UnixMilli()
	for _, text := range []string{"", "@every", "@every5s", "@every 500ms", "@every -1s", "@every soon",
		"* * * *", "61 * * * *", "CRON_TZ=Mars/Olympus 0 9 * * *", "TZ=Local 0 9 * * *", "* * * * * *  *",
		"0 0 30 2 *", "@fortnightly"} {
		if _, err := Parse(text, time.Second, now); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid", text, err)
		}
	}
	if _, err := Parse("*/5 * * * * *", 10*time.Second, now); !errors.Is(err, ErrInvalid) {
		t.Errorf("every 5 s under a 10 s minimum: %v", err)
	}
	if _, err := Parse("* * * * * *", time.Second, now); err != nil {
		t.Errorf("every second at a 1 s minimum: %v", err)
	}
}

// Every minute and every second across New York's fall back (2026-11-01,
// 01:00-02:00 twice): the series goes on at 02:00 EST, an hour of real
// time after 01:59 EDT (a search that skipped the repeated hour fire by
// fire gave up there and ended the series).
func TestFallBackFineSchedules(t *testing.T) {
	ny := "America/New_York"
	from := time.Date(2026, 11, 1, 5, 57, 30, 0, time.UTC) // 01:57:30 EDT
	got := fires(t, "CRON_TZ="+ny+" * * * * *", from, 4)
	expect(t, got, time.Date(2026, 11, 1, 5, 58, 0, 0, time.UTC), time.Date(2026, 11, 1, 5, 59, 0, 0, time.UTC),
		time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 7, 1, 0, 0, time.UTC))
	from = time.Date(2026, 11, 1, 5, 59, 58, 0, time.UTC) // 01:59:58 EDT
	got = fires(t, "CRON_TZ="+ny+" * * * * * *", from, 3)
	expect(t, got, time.Date(2026, 11, 1, 5, 59, 59, 0, time.UTC), time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 1, 7, 0, 1, 0, time.UTC))
}
