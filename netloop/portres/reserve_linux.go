//go:build linux

package portres

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Reservation holds one loopback port (see the package doc).
type Reservation struct {
	f    *os.File
	addr string
}

// Reserve holds a port on 127.0.0.1 that the kernel picks.
func Reserve() (*Reservation, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("reserve a port: socket: %w", err)
	}
	fail := func(what string, err error) (*Reservation, error) {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("reserve a port: %s: %w", what, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fail("SO_REUSEADDR", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fail("bind 127.0.0.1:0", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		return fail("getsockname", fmt.Errorf("unexpected address %T", sa))
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port))
	return &Reservation{f: os.NewFile(uintptr(fd), "port reservation "+addr), addr: addr}, nil
}

// Addr is the reserved 127.0.0.1:port.
func (r *Reservation) Addr() string { return r.addr }

// Close releases the port.
func (r *Reservation) Close() error { return r.f.Close() }
