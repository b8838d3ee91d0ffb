package netloop

import (
	"net"
	"net/netip"
)

// LoopbackListen reports whether a listen address ("host:port") takes
// connections from this machine only: its host is a loopback address or
// "localhost". An empty or unspecified host listens everywhere (false), as
// does an address that does not parse.
func LoopbackListen(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
