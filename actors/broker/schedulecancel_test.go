package broker

import (
	"strings"
	"testing"
	"time"
)

// TestPendingFire: the fire a schedule's cancel names is its first after
// now, whether the record the cancel was given on is still ahead or long
// past, for an interval and for a cron schedule; a text that no longer
// parses is refused.
func TestPendingFire(t *testing.T) {
	at := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	now := at("2026-12-05T12:00:00.500Z")
	for _, c := range []struct {
		text      string
		due, want int64
	}{
		{"@every 1s", at("2026-12-05T12:00:03Z"), at("2026-12-05T12:00:03Z")},         // still ahead: itself
		{"@every 1s", at("2026-12-05T11:59:50Z"), at("2026-12-05T12:00:01Z")},         // past: the series' next after now
		{"@every 1s", at("2026-12-05T12:00:00.500Z"), at("2026-12-05T12:00:01.500Z")}, // due now: the next
		{"@every 1h", at("2026-12-05T09:00:00Z"), at("2026-12-05T13:00:00Z")},
		{"0 9 * * *", at("2026-12-04T09:00:00Z"), at("2026-12-06T09:00:00Z")},
		{"CRON_TZ=Europe/Berlin 0 9 * * *", at("2026-12-04T08:00:00Z"), at("2026-12-06T08:00:00Z")},
	} {
		got, err := pendingFire(c.text, c.due, now)
		if err != nil || got != c.want {
			t.Errorf("pendingFire(%q, %s): %s, %v; want %s", c.text, time.UnixMilli(c.due).UTC(), time.UnixMilli(got).UTC(), err,
				time.UnixMilli(c.want).UTC())
		}
	}
	if _, err := pendingFire("@every nope", now, now); err == nil || !strings.Contains(err.Error(), "no longer parses") {
		t.Fatalf("a text that does not parse: %v", err)
	}
}
