//go:build !unix

package netloop

import "github.com/panjf2000/gnet/v2"

// listenerAddr returns the configured address: reading the bound address
// back is only implemented on Unix, so port 0 is not resolved here.
func listenerAddr(_ gnet.Engine, configured string) (string, error) {
	return configured, nil
}

// localAddr returns what gnet reports as the connection's local address.
func localAddr(gc gnet.Conn) string {
	return addrString(gc.LocalAddr())
}

// connFD disables direct writes: every write goes through the event loop.
func connFD(gnet.Conn) int { return -1 }

// writeFD is never called without direct writes.
func writeFD(int, []byte) int { return 0 }

// closeWrite is not implemented here: Stop closes the connection.
func closeWrite(gnet.Conn) error { return nil }
