package mqclient

import (
	"context"
	"fmt"
	"sync"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// connTable holds one connection per address.
type connTable struct {
	mu     sync.Mutex
	m      map[string]*connSlot
	closed bool
}

// connSlot is the connection of one address.
type connSlot struct {
	c       *remoting.Client
	dialing chan struct{} // non-nil while a dial runs; closed when it ends
}

// Conn returns the connection to addr, dialing it (within ctx and
// Config.DialTimeout) when there is none or the last one is gone. Concurrent
// callers share one dial. A new broker connection gets a heartbeat at once.
func (i *Instance) Conn(ctx context.Context, addr string) (*remoting.Client, error) {
	t := &i.conns
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, fmt.Errorf("connection to %s: %w", addr, ErrClosed)
		}
		s := t.m[addr]
		if s == nil {
			s = &connSlot{}
			t.m[addr] = s
		}
		if s.c != nil && s.c.Err() == nil {
			c := s.c
			t.mu.Unlock()
			return c, nil
		}
		if s.dialing != nil {
			ch := s.dialing
			t.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("connection to %s: waiting for a dial: %w", addr, ctx.Err())
			}
		}
		old := s.c
		s.c = nil
		ch := make(chan struct{})
		s.dialing = ch
		t.mu.Unlock()
		if old != nil {
			_ = old.Close() // already dead; this only waits for its goroutines
		}
		c, err := i.dial(ctx, addr)
		t.mu.Lock()
		s.dialing = nil
		close(ch)
		if err == nil && t.closed {
			t.mu.Unlock()
			_ = c.Close()
			return nil, fmt.Errorf("connection to %s: %w", addr, ErrClosed)
		}
		if err == nil {
			s.c = c
		}
		t.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if !i.isNameServer(addr) {
			i.sendHeartbeat(c)
		}
		return c, nil
	}
}

// dial connects to addr within ctx and Config.DialTimeout.
func (i *Instance) dial(ctx context.Context, addr string) (*remoting.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, i.cfg.DialTimeout)
	defer cancel()
	c, err := remoting.Dial(dctx, addr, remoting.ClientOptions{
		Logger:         i.log,
		MaxQueuedBytes: i.cfg.MaxQueuedBytes,
		Sign:           i.cfg.Credentials.Signer(),
		TLS:            i.cfg.TLS,
	})
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", i.id, err)
	}
	i.log.Debug().Str("remote", addr).Msg("connected")
	return c, nil
}

// connected returns the live connections by address.
func (t *connTable) connected() map[string]*remoting.Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]*remoting.Client, len(t.m))
	for a, s := range t.m {
		if s.c != nil && s.c.Err() == nil {
			out[a] = s.c
		}
	}
	return out
}

// dropIdle closes the connections whose address keep rejects and that have
// no request in flight.
func (t *connTable) dropIdle(keep func(addr string) bool) []string {
	t.mu.Lock()
	var victims []*remoting.Client
	var dropped []string
	for a, s := range t.m {
		if keep(a) || s.dialing != nil || s.c != nil && s.c.Pending() > 0 {
			continue
		}
		if s.c != nil {
			victims = append(victims, s.c)
		}
		delete(t.m, a)
		dropped = append(dropped, a)
	}
	t.mu.Unlock()
	for _, c := range victims {
		_ = c.Close()
	}
	return dropped
}

// closeAll closes every connection; later Conn calls fail with ErrClosed.
func (t *connTable) closeAll() {
	t.mu.Lock()
	t.closed = true
	var all []*remoting.Client
	for _, s := range t.m {
		if s.c != nil {
			all = append(all, s.c)
		}
	}
	t.m = map[string]*connSlot{}
	t.mu.Unlock()
	for _, c := range all {
		_ = c.Close()
	}
}

// ConnIfUp returns the live connection to addr, or nil when there is none
// (Conn then dials). It never blocks.
func (i *Instance) ConnIfUp(addr string) *remoting.Client {
	t := &i.conns
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.m[addr]; s != nil && s.c != nil && s.c.Err() == nil {
		return s.c
	}
	return nil
}
