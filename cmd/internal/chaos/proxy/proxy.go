// Package proxy is the chaos harness's TCP proxy: it listens on one
// address, forwards every connection to a target and can, at any moment and
// from any goroutine, let the bytes pass, drop them (both ways or one way)
// while keeping the connections open, or reset every connection and refuse
// new ones.
//
// A blackhole keeps the TCP connections up (the kernel's keepalives still
// get answered by the proxy), so neither side learns of the partition from
// the socket: only application-level timeouts and leases can, which is what
// a partition test wants to exercise. A connection accepted while the proxy
// is fully blackholed is held without dialing the target (as a SYN into a
// black hole would never reach it); such held connections are closed when
// the mode changes, so that the client dials again.
//
// Every goroutine (the accept loop, two copiers per connection) belongs to
// the Proxy and has ended when Close returns.
package proxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Mode says what the proxy does with the bytes of its connections.
type Mode int32

const (
	// Pass forwards the bytes both ways.
	Pass Mode = iota
	// Blackhole drops the bytes both ways and keeps the connections open.
	Blackhole
	// DropUp drops the bytes from the client to the target (the target
	// still answers what it got before, and its own pushes pass).
	DropUp
	// DropDown drops the bytes from the target to the client.
	DropDown
	// Reset closes every connection and refuses new ones (accepted and
	// closed at once with a TCP RST).
	Reset
)

// String names the mode as the chaos history logs it.
func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Blackhole:
		return "blackhole"
	case DropUp:
		return "drop-up"
	case DropDown:
		return "drop-down"
	case Reset:
		return "reset"
	}
	return fmt.Sprintf("mode(%d)", int32(m))
}

// drops reports whether bytes flowing up (client to target) or down are
// dropped in m.
func (m Mode) drops(up bool) bool {
	switch m {
	case Blackhole, Reset:
		return true
	case DropUp:
		return up
	case DropDown:
		return !up
	}
	return false
}

// dialTimeout bounds the dial of the target per accepted connection.
const dialTimeout = 2 * time.Second

// Proxy forwards the connections of one listener to one target.
type Proxy struct {
	name   string
	target string
	ln     net.Listener
	log    zerolog.Logger
	mode   atomic.Int32

	mu     sync.Mutex
	links  map[*link]struct{} // guarded by mu
	closed bool               // guarded by mu
	wg     sync.WaitGroup     // the accept loop and every link's copiers
}

// link is one proxied connection: the client side and, unless it was
// accepted into a full blackhole, the target side.
type link struct {
	client   net.Conn
	mu       sync.Mutex
	upstream net.Conn // guarded by mu; nil: not dialed (yet), or held in a blackhole
	closed   bool     // guarded by mu
}

// close closes both sides; an upstream attached later is closed by attach.
func (l *link) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	_ = l.client.Close()
	if l.upstream != nil {
		_ = l.upstream.Close()
	}
}

// attach sets the dialed upstream; false (and up closed) when the link was
// closed meanwhile.
func (l *link) attach(up net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = up.Close()
		return false
	}
	l.upstream = up
	return true
}

// dialed reports whether the link has an upstream.
func (l *link) dialed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.upstream != nil
}

// New listens on listen ("127.0.0.1:0" for a free port) and forwards to
// target; name labels its log lines. It starts in Pass mode.
func New(name, listen, target string, log zerolog.Logger) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: listen %s: %w", name, listen, err)
	}
	p := &Proxy{name: name, target: target, ln: ln, links: map[*link]struct{}{},
		log: log.With().Str("proxy", name).Str("target", target).Logger()}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Name is the proxy's label.
func (p *Proxy) Name() string { return p.name }

// Mode is the current mode.
func (p *Proxy) Mode() Mode { return Mode(p.mode.Load()) }

// SetMode switches the mode at once for every connection, present and
// future. Reset closes every connection; leaving a full Blackhole closes the
// connections held in it without a target.
func (p *Proxy) SetMode(m Mode) {
	old := Mode(p.mode.Swap(int32(m)))
	if old != m {
		p.log.Info().Stringer("from", old).Stringer("to", m).Msg("proxy mode")
	}
	if m == Reset || (old == Blackhole && m != Blackhole) {
		p.mu.Lock()
		var doomed []*link
		for l := range p.links {
			if m == Reset || !l.dialed() {
				doomed = append(doomed, l)
			}
		}
		p.mu.Unlock()
		for _, l := range doomed {
			l.close()
		}
	}
}

// Conns is the number of connections the proxy holds now.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops listening, closes every connection and waits for every
// goroutine of the proxy to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range links {
		l.close()
	}
	p.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("proxy %s: close: %w", p.name, err)
	}
	return nil
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.log.Warn().Err(err).Msg("proxy accept")
			}
			return
		}
		p.serve(c)
	}
}

// serve sets up one accepted connection; the dial happens in the link's
// own goroutine so that a slow target never stalls the accept loop.
func (p *Proxy) serve(c net.Conn) {
	if p.Mode() == Reset {
		refuse(c)
		return
	}
	l := &link{client: c}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.links[l] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	go p.run(l)
}

// refuse closes c with a RST.
func refuse(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// run dials the target (unless the proxy is a full blackhole) and copies
// both ways until either side ends.
func (p *Proxy) run(l *link) {
	defer p.wg.Done()
	defer p.forget(l)
	if p.Mode() == Blackhole {
		// Held without a target: read and drop until the mode changes
		// (SetMode closes the link) or the client leaves.
		p.drain(l.client)
		l.close()
		return
	}
	up, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil {
		p.log.Debug().Err(err).Msg("proxy dial")
		refuse(l.client)
		return
	}
	if !l.attach(up) {
		return
	}
	if p.Mode() == Reset {
		l.close()
		return
	}
	done := make(chan struct{})
	go func() { // owned by run: it waits on done below
		defer close(done)
		p.copy(l, up, l.client, true)
	}()
	p.copy(l, l.client, up, false)
	<-done
}

func (p *Proxy) forget(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// drain reads c until it fails, dropping everything.
func (p *Proxy) drain(c net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// copy moves bytes from src to dst (up: client to target), dropping them
// while the mode says so; when either side fails it closes the link, which
// ends the other direction too.
func (p *Proxy) copy(l *link, dst, src net.Conn, up bool) {
	defer l.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.Mode().drops(up) {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
