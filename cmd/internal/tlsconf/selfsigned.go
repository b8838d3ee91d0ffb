package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Names of the self-signed certificate's files in its directory.
const (
	SelfSignedCert = "self-signed.crt"
	SelfSignedKey  = "self-signed.key"
)

// Self-signed certificate lifetime, and how long before its end it is made
// again.
const (
	selfSignedValidity = 5 * 365 * 24 * time.Hour
	selfSignedRenew    = 30 * 24 * time.Hour
)

// ensureSelfSigned returns the paths of the self-signed certificate and key
// in dir, making them when they are missing, do not load or expire soon.
// hosts are the names and addresses it is for, besides localhost, 127.0.0.1
// and ::1.
func ensureSelfSigned(fs vfs.FS, dir string, hosts []string, now time.Time, log zerolog.Logger) (certPath, keyPath string, err error) {
	certPath, keyPath = filepath.Join(dir, SelfSignedCert), filepath.Join(dir, SelfSignedKey)
	dns, ips := sans(hosts)
	cert, err := loadPair(fs, certPath, keyPath)
	switch {
	case err == nil && cert.Leaf.NotAfter.After(now.Add(selfSignedRenew)):
		if missing := missingSANs(cert.Leaf, dns, ips); len(missing) > 0 {
			log.Warn().Str("cert", certPath).Strs("missing", missing).
				Msg("the self-signed certificate does not name every host of this process (clients that verify it will refuse those names); delete it to have it made again")
		}
		return certPath, keyPath, nil
	case err == nil:
		log.Info().Str("cert", certPath).Time("not_after", cert.Leaf.NotAfter).Msg("self-signed certificate expires soon: making a new one")
	default:
		if exists(fs, certPath) || exists(fs, keyPath) {
			log.Warn().Err(err).Str("cert", certPath).Msg("self-signed certificate does not load: making a new one")
		}
	}
	if err := vfs.MkdirAllSynced(fs, dir, 0o700); err != nil {
		return "", "", fmt.Errorf("tls self-signed certificate: %w", err)
	}
	certPEM, keyPEM, err := newSelfSigned(dns, ips, now)
	if err != nil {
		return "", "", err
	}
	if err := vfs.WriteFileAtomic(fs, keyPath, keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("tls self-signed key: %w", err)
	}
	if err := vfs.WriteFileAtomic(fs, certPath, certPEM, 0o644); err != nil {
		return "", "", fmt.Errorf("tls self-signed certificate: %w", err)
	}
	log.Info().Str("cert", certPath).Str("key", keyPath).Strs("dns", dns).Str("ips", fmt.Sprint(ips)).
		Msg("self-signed TLS certificate made")
	return certPath, keyPath, nil
}

// sans splits hosts into DNS names and IP addresses, with localhost,
// 127.0.0.1 and ::1 first, without duplicates or empty names.
func sans(hosts []string) (dns []string, ips []net.IP) {
	dns = []string{"localhost"}
	ips = []net.IP{net.IPv4(127, 0, 0, 1).To4(), net.IPv6loopback}
	for _, h := range hosts {
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if ip4 := ip.To4(); ip4 != nil {
				ip = ip4
			}
			if !ip.IsUnspecified() && !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			continue
		}
		if !slices.Contains(dns, h) {
			dns = append(dns, h)
		}
	}
	return dns, ips
}

// missingSANs lists the names and addresses leaf does not carry.
func missingSANs(leaf *x509.Certificate, dns []string, ips []net.IP) []string {
	var out []string
	for _, d := range dns {
		if !slices.Contains(leaf.DNSNames, d) {
			out = append(out, d)
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			out = append(out, ip.String())
		}
	}
	return out
}

// newSelfSigned makes an ECDSA P-256 key and a self-signed certificate for
// dns and ips, both PEM-encoded.
func newSelfSigned(dns []string, ips []net.IP, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tls self-signed key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("tls self-signed serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "wheelmq self-signed", Organization: []string{"wheelmq"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(selfSignedValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Client auth too: the broker presents it to name servers that
		// require client certificates (see Reloader.ClientConfig).
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		DNSNames:              dns,
		IPAddresses:           ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("tls self-signed certificate: %w", err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("tls self-signed key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), nil
}

// loadPair reads a PEM certificate (chain) and its key.
func loadPair(fs vfs.FS, certPath, keyPath string) (tls.Certificate, error) {
	certPEM, err := vfs.ReadFile(fs, certPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls certificate: %w", err)
	}
	keyPEM, err := vfs.ReadFile(fs, keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls certificate %s with key %s: %w", certPath, keyPath, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return tls.Certificate{}, fmt.Errorf("tls certificate %s: %w", certPath, err)
		}
	}
	return cert, nil
}

// exists reports whether path can be stat'ed.
func exists(fs vfs.FS, path string) bool {
	_, err := vfs.Default(fs).Stat(path)
	return err == nil
}
