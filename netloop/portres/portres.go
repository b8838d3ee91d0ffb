// Package portres holds loopback ports for processes that a test or a
// benchmark starts, and restarts, on fixed addresses.
//
// Picking a "free" port (listen on port 0, close, pass the number on)
// races every other bind and outgoing connection on the machine until the
// process binds it: another test's process or client may take the port
// first ("address already in use"). A Reservation instead keeps the port
// bound for as long as it is open: a TCP socket on 127.0.0.1 with
// SO_REUSEADDR, bound and never listening.
//
// Linux's rules make that a reservation (reserve_linux.go):
//   - a port-0 bind (wildcard or loopback) and the implicit bind of an
//     outgoing connection skip every port that a bound socket holds, so
//     the kernel gives the reserved port to nobody else;
//   - a socket that sets SO_REUSEADDR before an explicit bind (Go's
//     net.Listen and gnet do, so every listener of wheelmq does) may bind
//     and listen on a port whose other owners all set it and none listens;
//   - a connection to the port while nothing listens is refused at once,
//     as on a free port, so a killed process looks as dead as it is.
//
// Elsewhere Reserve returns ErrUnsupported.
package portres

import "errors"

// ErrUnsupported is Reserve's error where the bind rules above are not
// known to hold.
var ErrUnsupported = errors.New("portres: port reservations need Linux")
