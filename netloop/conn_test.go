package netloop

import (
	"net"
	"testing"
)

func TestTCPAddrPort(t *testing.T) {
	tests := []struct {
		in   net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 9876}, "10.0.0.1:9876"}, // 16-byte form
		{&net.TCPAddr{IP: net.IP{10, 0, 0, 1}, Port: 1}, "10.0.0.1:1"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 2}, "[2001:db8::1]:2"},
		{&net.UnixAddr{Name: "/tmp/x", Net: "unix"}, "invalid AddrPort"},
	}
	for _, tc := range tests {
		if got := tcpAddrPort(tc.in).String(); got != tc.want {
			t.Errorf("tcpAddrPort(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
