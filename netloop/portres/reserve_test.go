//go:build linux

package portres

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestReserve checks the kernel behaviour a Reservation relies on: the
// reserved port refuses connections while nobody serves it, a listener
// binds it again and again (with connections left in TIME_WAIT between
// rounds), and no port-0 bind, wildcard or loopback, nor any outgoing
// connection is given a reserved port.
func TestReserve(t *testing.T) {
	addr := Hold(t)
	if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
		c.Close()
		t.Fatalf("dial to %s with no server succeeded", addr)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial to %s with no server: want ECONNREFUSED, got %v", addr, err)
	}
	for round := 0; round < 3; round++ {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("round %d: listen on the reserved %s: %v", round, addr, err)
		}
		served := make(chan struct{})
		go func() {
			defer close(served)
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte{1})
				c.Close() // the server closes first: TIME_WAIT on the reserved port
			}
		}()
		for i := 0; i < 10; i++ {
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				t.Fatalf("round %d: dial: %v", round, err)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err != nil {
				t.Fatalf("round %d: read: %v", round, err)
			}
			c.Close()
		}
		ln.Close()
		<-served
	}

	reserved := map[string]bool{addr: true}
	for i := 0; i < 100; i++ {
		a := Hold(t)
		if reserved[a] {
			t.Fatalf("two reservations got %s", a)
		}
		reserved[a] = true
	}
	sink, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	go func() {
		for {
			c, err := sink.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// With 101 of the ~28,000 ephemeral ports reserved, 3,000 unguarded
	// picks would hit one about ten times.
	for i := 0; i < 1000; i++ {
		for _, network := range []string{"127.0.0.1:0", ":0"} {
			l, err := net.Listen("tcp", network)
			if err != nil {
				t.Fatal(err)
			}
			_, port, _ := net.SplitHostPort(l.Addr().String())
			l.Close()
			if reserved["127.0.0.1:"+port] {
				t.Fatalf("a port-0 bind (%s) was given the reserved port %s", network, port)
			}
		}
		c, err := net.Dial("tcp", sink.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		local := c.LocalAddr().String()
		c.Close()
		if reserved[local] {
			t.Fatalf("an outgoing connection was given the reserved %s", local)
		}
	}
}
