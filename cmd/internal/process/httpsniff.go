package process

// One HTTP port for HTTPS and plain HTTP (--tls-mode permissive), as the
// remoting ports: the first byte of a connection tells them apart (0x16
// opens a TLS handshake). The accept loop never reads: each connection is
// sniffed on its own goroutine, within a deadline, and handed to the
// http.Server through one of two in-memory listeners.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// sniffTimeout bounds the wait for a connection's first byte.
const sniffTimeout = 5 * time.Second

// tlsRecordHandshake is the first byte of a TLS ClientHello.
const tlsRecordHandshake = 0x16

// sniffer splits the connections of ln between plain and tls.
type sniffer struct {
	ln         net.Listener
	plain, tls *chanListener
	log        zerolog.Logger
	wg         sync.WaitGroup // the sniffs under way
	// stopped is closed when run has returned and every sniff ended.
	stopped chan struct{}
}

func newSniffer(ln net.Listener, log zerolog.Logger) *sniffer {
	done := make(chan struct{})
	var once sync.Once
	closeAll := func() error {
		var err error
		once.Do(func() { close(done); err = ln.Close() })
		return err
	}
	mk := func() *chanListener {
		return &chanListener{ch: make(chan net.Conn), done: done, close: closeAll, addr: ln.Addr()}
	}
	return &sniffer{ln: ln, plain: mk(), tls: mk(), log: log, stopped: make(chan struct{})}
}

// run accepts until ln is closed (by either listener's Close, which
// http.Server.Shutdown calls), then waits for the sniffs under way.
func (s *sniffer) run() {
	defer close(s.stopped)
	defer s.wg.Wait()
	defer func() {
		if r := recover(); r != nil {
			s.log.Error().Interface("panic", r).Msg("http accept loop panicked")
			_ = s.plain.Close()
		}
	}()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.plain.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			s.log.Error().Err(err).Msg("http accept failed: the endpoint stops")
			_ = s.plain.Close()
			return
		}
		s.wg.Add(1)
		go s.sniff(c)
	}
}

// sniff reads c's first byte (within sniffTimeout) and hands c on.
func (s *sniffer) sniff(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			s.log.Error().Interface("panic", r).Msg("http connection sniff panicked")
			_ = c.Close()
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	br := bufio.NewReaderSize(c, 512)
	first, err := br.Peek(1)
	if err != nil {
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	to := s.plain
	if first[0] == tlsRecordHandshake {
		to = s.tls
	}
	to.deliver(&peekedConn{Conn: c, r: br})
}

// peekedConn is a connection whose first bytes sit in r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

// Read implements net.Conn.
func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// chanListener is a net.Listener fed by the sniffer.
type chanListener struct {
	ch    chan net.Conn
	done  chan struct{}
	close func() error
	addr  net.Addr
}

// deliver hands c to Accept, or closes it once the listener is closed.
func (l *chanListener) deliver(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		_ = c.Close()
	}
}

// Accept implements net.Listener.
func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener: it closes both listeners and the port.
func (l *chanListener) Close() error { return l.close() }

// Addr implements net.Listener.
func (l *chanListener) Addr() net.Addr { return l.addr }

// wait waits (within ctx) for run to end, after the listeners closed.
func (s *sniffer) wait(ctx context.Context) error {
	select {
	case <-s.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("http accept loop: %w", ctx.Err())
	}
}
