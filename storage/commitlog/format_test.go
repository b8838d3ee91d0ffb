package commitlog

import "testing"

func TestChecksumIsCastagnoli(t *testing.T) {
	// Standard CRC-32C check value.
	if got := checksum([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("checksum = %#08x, want 0xe3069283", got)
	}
}

func TestSegmentNames(t *testing.T) {
	tests := []struct {
		name string
		base int64
		ok   bool
	}{
		{"00000000000000000000", 0, true},
		{"00000000001073741824", 1 << 30, true},
		{"09223372036854775807", 1<<63 - 1, true},
		{"09223372036854775808", 0, false}, // overflows int64
		{"0000000000000000000", 0, false},  // 19 digits
		{"0000000000000000000a", 0, false},
		{"00000000000000000000.tmp", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		base, ok := parseSegmentName(tt.name)
		if ok != tt.ok || base != tt.base {
			t.Errorf("parseSegmentName(%q) = %d, %v; want %d, %v", tt.name, base, ok, tt.base, tt.ok)
		}
		if tt.ok && segmentName(base) != tt.name {
			t.Errorf("segmentName(%d) = %q, want %q", base, segmentName(base), tt.name)
		}
	}
}
