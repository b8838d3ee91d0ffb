//go:build !linux

package portres

// Reservation is not available on this system.
type Reservation struct{}

// Reserve returns ErrUnsupported.
func Reserve() (*Reservation, error) { return nil, ErrUnsupported }

// Addr is empty.
func (r *Reservation) Addr() string { return "" }

// Close does nothing.
func (r *Reservation) Close() error { return nil }
