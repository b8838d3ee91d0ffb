//go:build unix

package netloop

import (
	"fmt"
	"net/netip"
	"strconv"
	"syscall"

	"github.com/panjf2000/gnet/v2"
)

// listenerAddr returns the address the engine's listener is bound to, read
// with getsockname from a duplicate of its descriptor, so port 0 resolves
// to the real port. gnet v2.9.7 has no API for it.
func listenerAddr(eng gnet.Engine, _ string) (string, error) {
	fd, err := eng.Dup()
	if err != nil {
		return "", fmt.Errorf("netloop dup listener: %w", err)
	}
	defer syscall.Close(fd)
	return sockName(fd)
}

// localAddr returns a connection's local address. gnet reports the
// listener's configured address (port 0 included), so ask the socket.
func localAddr(gc gnet.Conn) string {
	if a, err := sockName(gc.Fd()); err == nil {
		return a
	}
	return addrString(gc.LocalAddr())
}

// sockName formats getsockname of fd as "ip:port".
func sockName(fd int) (string, error) {
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return "", fmt.Errorf("netloop getsockname: %w", err)
	}
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)).String(), nil
	case *syscall.SockaddrInet6:
		ip := netip.AddrFrom16(a.Addr)
		if a.ZoneId != 0 {
			ip = ip.WithZone(strconv.FormatUint(uint64(a.ZoneId), 10))
		}
		return netip.AddrPortFrom(ip, uint16(a.Port)).String(), nil
	}
	return "", fmt.Errorf("netloop socket address of type %T", sa)
}

// connFD returns the socket of a gnet connection, for direct writes.
func connFD(gc gnet.Conn) int { return gc.Fd() }

// writeFD writes b to the non-blocking socket fd and returns how many bytes
// it took: len(b), or less when the socket is full or failed (the caller
// hands the rest to the event loop, which reports the error).
func writeFD(fd int, b []byte) int {
	n := 0
	for n < len(b) {
		k, err := syscall.Write(fd, b[n:])
		if k > 0 {
			n += k
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil || k <= 0 {
			break
		}
	}
	return n
}

// closeWrite half-closes the connection's socket (FIN after what the
// kernel holds); on its event loop.
func closeWrite(gc gnet.Conn) error { return syscall.Shutdown(gc.Fd(), syscall.SHUT_WR) }
