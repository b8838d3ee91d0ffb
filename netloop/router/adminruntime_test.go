package router

import (
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/stats"
)

func TestRuntimeInfoFormats(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{formatRuntime(0), "[ 0 days, 0 hours, 0 minutes, 0 seconds ]"},
		{formatRuntime(26*time.Hour + 3*time.Minute + 4500*time.Millisecond), "[ 1 days, 2 hours, 3 minutes, 4 seconds ]"},
		{humanBytes(0), "0 B"},
		{humanBytes(1023), "1023 B"},
		{humanBytes(1024), "1.0 KiB"},
		{humanBytes(1536), "1.5 KiB"},
		{humanBytes(10 << 30), "10.0 GiB"},
		{humanBytes(5 << 40), "5.0 TiB"},
		{javaDouble(0), "0.0"},
		{javaDouble(3), "3.0"},
		{javaDouble(0.25), "0.25"},
		{formatRates(stats.Rates{1, 0.5, 0}), "1.0 0.5 0.0"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestDiskSpace(t *testing.T) {
	total, free, ok := diskSpace(t.TempDir())
	if !ok || total == 0 || free > total {
		t.Fatalf("diskSpace = %d, %d, %v", total, free, ok)
	}
	if _, _, ok := diskSpace("/no/such/dir"); ok {
		t.Error("diskSpace of a missing directory succeeded")
	}
}
