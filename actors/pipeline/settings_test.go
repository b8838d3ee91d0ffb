package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestUpdateSettings(t *testing.T) {
	p := &Pipeline{cfg: DefaultConfig()}
	p.cfg.DiskForceCleanRatio = 0.95 // above the full ratio: clamped, as the retention stage always did
	start := time.UnixMilli(1_700_000_000_000)
	if err := p.initSettings(start); err != nil {
		t.Fatal(err)
	}
	s0 := p.Settings()
	if s0.Version.Counter != 0 || s0.Version.Timestamp != start.UnixMilli() || s0.DiskForceCleanRatio != 0.90 {
		t.Fatalf("first settings %+v", s0)
	}
	if pol, full := p.retentionLive(); pol.CleanRatio != 0.75 || pol.ForceRatio != 0.90 || full != 0.90 ||
		pol.Retention != 72*time.Hour || pol.MaxPerRound != 10 {
		t.Fatalf("retention policy %+v, full %v", pol, full)
	}

	s1, err := p.UpdateSettings(func(s *Settings) { s.Retention, s.RetentionAt = time.Hour, "any" })
	if err != nil {
		t.Fatal(err)
	}
	if p.Settings() != s1 || s1.Version.Counter != 1 || s1.Version.Timestamp < s0.Version.Timestamp || s0.Retention != 72*time.Hour {
		t.Fatalf("after an update: %+v (before %+v)", s1, s0)
	}
	if pol, _ := p.retentionLive(); pol.Retention != time.Hour || !pol.Schedule.Open(start) {
		t.Fatalf("retention policy after the update %+v", pol)
	}

	for _, c := range []struct {
		name   string
		change func(*Settings)
		want   string
	}{
		{"message size over the frame", func(s *Settings) { s.MaxMessageSize = p.cfg.MaxMessageSizeLimit() + 1 }, "max message size"},
		{"ratios falling", func(s *Settings) { s.DiskFullRatio = 0.5 }, "must not fall"},
		{"bad schedule", func(s *Settings) { s.RetentionAt = "25:00" }, "retention time"},
		{"no checks", func(s *Settings) { s.TransactionCheckMax = 0 }, "check max 0"},
		{"fixed log level", func(s *Settings) { s.LogLevel = zerolog.DebugLevel }, "fixed by its process"},
	} {
		got, err := p.UpdateSettings(c.change)
		if err == nil || !strings.Contains(err.Error(), c.want) || got != s1 || p.Settings() != s1 {
			t.Errorf("%s: error %v, want one containing %q and nothing changed", c.name, err, c.want)
		}
	}

	var set zerolog.Level = zerolog.NoLevel
	p.cfg.SetLogLevel = func(l zerolog.Level) { set = l }
	if s, err := p.UpdateSettings(func(s *Settings) { s.LogLevel = zerolog.ErrorLevel }); err != nil || set != zerolog.ErrorLevel ||
		s.LogLevel != zerolog.ErrorLevel || s.Version.Counter != 2 {
		t.Fatalf("log level: %+v %v, handed on %v", s, err, set)
	}
}
