package process

import (
	"crypto/tls"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/tlsconf"
	"github.com/wheelmq/wheelmq/netloop"
)

// TLSConfig configures TLS on every remoting port of the process (the
// broker's and the name server's) and on its own connections to name
// servers; see docs/operations.md, "TLS".
type TLSConfig struct {
	// Mode is what every port accepts; the zero value serves plaintext
	// only.
	Mode netloop.TLSMode
	// CertFile and KeyFile are the server certificate and key (PEM); both
	// empty: a self-signed certificate in Dir.
	CertFile, KeyFile string
	// ClientCAFile, when set, makes every port require a client
	// certificate that chains to one of its CAs.
	ClientCAFile string
	// Dir holds the self-signed certificate ("": <Broker.DataDir>/tls).
	Dir string
	// Namesrv makes the broker's registrations with name servers speak
	// TLS (cmd/wheelmq: by default when Mode is enforcing, as RocketMQ's
	// brokers do).
	Namesrv bool
	// HandshakeTimeout bounds a handshake (zero: netloop's default, 10 s).
	HandshakeTimeout time.Duration
	// Poll is how often the files are looked at (zero: every second).
	Poll time.Duration
}

// TLSDir is the self-signed certificate's directory of a data directory.
func TLSDir(dataDir string) string { return filepath.Join(dataDir, "tls") }

// startTLS loads the TLS material when a port takes TLS and starts its
// reloader (nil when TLS is disabled).
func (n *Node) startTLS() error {
	c := n.cfg.TLS
	if c.Mode == netloop.TLSDisabled {
		return nil
	}
	dir := c.Dir
	if dir == "" {
		dir = TLSDir(n.cfg.Broker.DataDir)
	}
	r, err := tlsconf.Open(tlsconf.Options{
		CertFile: c.CertFile, KeyFile: c.KeyFile, ClientCAFile: c.ClientCAFile, Dir: dir,
		Hosts: certHosts(n.cfg.Broker), Poll: c.Poll,
		Logger: n.cfg.Logger.With().Str("component", "tls").Logger(),
	})
	if err != nil {
		return err
	}
	r.Start()
	n.tls = r
	return nil
}

// stopTLS stops the reloader.
func (n *Node) stopTLS() {
	if n.tls != nil {
		n.tls.Stop()
	}
}

// portTLS is the TLS configuration of a remoting port.
func (n *Node) portTLS() netloop.TLS {
	t := netloop.TLS{Mode: n.cfg.TLS.Mode, HandshakeTimeout: n.cfg.TLS.HandshakeTimeout}
	if n.tls != nil {
		t.Config = n.tls.ServerConfig()
	}
	return t
}

// namesrvClientTLS is the TLS configuration of the broker's connections to
// name servers (nil: plaintext).
func (n *Node) namesrvClientTLS() *tls.Config {
	if !n.cfg.TLS.Namesrv {
		return nil
	}
	return n.tls.ClientConfig()
}

// TLSFingerprint is the SHA-256 fingerprint of the certificate the ports
// serve ("" without TLS).
func (n *Node) TLSFingerprint() string {
	if n.tls == nil {
		return ""
	}
	return n.tls.Fingerprint()
}

// TLSReloader is the process's TLS material (nil without TLS), for tests.
func (n *Node) TLSReloader() *tlsconf.Reloader { return n.tls }

// certHosts are the names a self-signed certificate is for besides the
// loopback ones: the advertised host (or, without one, the host the broker
// would advertise) and the hostname.
func certHosts(bc pipeline.Config) []string {
	var hosts []string
	if bc.Advertise != "" {
		if ap, err := netip.ParseAddrPort(bc.Advertise); err == nil {
			hosts = append(hosts, ap.Addr().String())
		}
	} else if host, _, err := net.SplitHostPort(bc.Listen); err == nil {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			hosts = append(hosts, reachableIP().String())
		} else {
			hosts = append(hosts, host)
		}
	}
	if h, err := os.Hostname(); err == nil {
		hosts = append(hosts, h)
	}
	return hosts
}
