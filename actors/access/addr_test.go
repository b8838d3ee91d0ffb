package access

import (
	"net/netip"
	"testing"
)

func TestAddrPattern(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		nomatch []string
	}{
		{"", nil, []string{"127.0.0.1", "::1"}},
		{"*", []string{"1.2.3.4", "::1"}, nil},
		{"*.*.*.*", []string{"10.0.0.1"}, nil},
		{"*:*:*:*:*:*:*:*", []string{"2001:db8::1"}, nil},
		{"192.168.1.7", []string{"192.168.1.7", "::ffff:192.168.1.7"}, []string{"192.168.1.8", "::1"}},
		{"192.168.1.7,10.0.0.1", []string{"192.168.1.7", "10.0.0.1"}, []string{"10.0.0.2"}},
		{"192.168.1.{1,2,3}", []string{"192.168.1.1", "192.168.1.3"}, []string{"192.168.1.4", "192.168.2.1"}},
		{"192.168.*.*", []string{"192.168.0.0", "192.168.255.255"}, []string{"192.169.0.1"}},
		{"192.168.1.1-100", []string{"192.168.1.1", "192.168.1.100"}, []string{"192.168.1.0", "192.168.1.101"}},
		{"10.1-2.*.*", []string{"10.1.9.9", "10.2.0.0"}, []string{"10.3.0.0"}},
		{"2001:db8::1", []string{"2001:db8::1", "2001:0db8:0:0:0:0:0:1"}, []string{"2001:db8::2", "32.1.13.184"}},
		{"2001:db8::1-ff", []string{"2001:db8::ff"}, []string{"2001:db8::100"}},
		{"2001:db8:0:0:*:*:*:*", []string{"2001:db8::abcd:1"}, []string{"2001:db9::1"}},
		{"2001:db8::{a,b}", []string{"2001:db8::a", "2001:db8::b"}, []string{"2001:db8::c"}},
	}
	for _, tt := range tests {
		p, err := ParseAddrPattern(tt.pattern)
		if err != nil {
			t.Errorf("%q: %v", tt.pattern, err)
			continue
		}
		for _, a := range tt.match {
			if !p.Match(netip.MustParseAddr(a)) {
				t.Errorf("%q does not match %s", tt.pattern, a)
			}
		}
		for _, a := range tt.nomatch {
			if p.Match(netip.MustParseAddr(a)) {
				t.Errorf("%q matches %s", tt.pattern, a)
			}
		}
	}
}

func TestAddrPatternErrors(t *testing.T) {
	for _, s := range []string{"1.2.3", "1.2.3.4.5", "256.1.1.1", "*.1.1.1", "10.*.0.1", "1.2.3.100-1", "1.2.3.x",
		"1.2.3.{}", "1.2.{3}.4", "1,,2", "2001:db8::1::2", "1:2:3", "01.2.3.4", "1.2.3.4-"} {
		if _, err := ParseAddrPattern(s); err == nil {
			t.Errorf("%q parsed", s)
		}
	}
}
