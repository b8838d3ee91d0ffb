package main

// The credentials and TLS of every connection a command makes: the admin
// session, the native producer, the official Go client, the benchmarks'
// lean clients. One set of global flags, resolved once before the command
// runs (security.prepare).

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// The environment variables of the credentials (the same names wheelmq's
// own --access-key and --secret-key read).
const (
	envAccessKey = "WHEELMQ_ACCESS_KEY"
	envSecretKey = "WHEELMQ_SECRET_KEY"
)

// security holds the global flags --access-key, --secret-key, --tls,
// --tls-ca and --tls-insecure, and what prepare makes of them.
type security struct {
	accessKey, secretKey string
	tls, tlsInsecure     bool
	tlsCA                string

	prepared bool
	creds    auth.Credentials
	tlsCfg   *tls.Config // nil: plaintext
}

// addFlags defines the flags. No default shows a value from the
// environment: a secret never appears in --help.
func (s *security) addFlags(pf *pflag.FlagSet) {
	pf.StringVar(&s.accessKey, "access-key", "",
		"access key to sign every request with, for a broker or name server with ACL on (env "+envAccessKey+")")
	pf.StringVar(&s.secretKey, "secret-key", "",
		"secret key of --access-key (env "+envSecretKey+", better than the flag, which other users may see in the process list); never printed")
	pf.BoolVar(&s.tls, "tls", false,
		"speak TLS to the name server and brokers, verifying their certificates against the system's CAs (or --tls-ca); "+
			"a server's self-signed certificate needs --tls-ca with that certificate, or --tls-insecure")
	pf.StringVar(&s.tlsCA, "tls-ca", "",
		"PEM file of the CA certificates to trust instead of the system's (a private CA, or the server's self-signed certificate); implies --tls")
	pf.BoolVar(&s.tlsInsecure, "tls-insecure", false,
		"speak TLS without verifying the server's certificate: encrypted, but open to a man in the middle; implies --tls")
}

// prepare reads the environment for the credentials the flags did not
// give, checks the combination and loads --tls-ca. It runs before every
// command (and before topic completion); it is idempotent.
func (s *security) prepare(cmd *cobra.Command) error {
	if s.prepared {
		return nil
	}
	if f := cmd.Flag("access-key"); f == nil || !f.Changed {
		s.accessKey = os.Getenv(envAccessKey)
	}
	if f := cmd.Flag("secret-key"); f == nil || !f.Changed {
		s.secretKey = os.Getenv(envSecretKey)
	}
	switch {
	case s.accessKey != "" && s.secretKey == "":
		return usagef("--access-key %q needs its secret: give --secret-key or set %s", s.accessKey, envSecretKey)
	case s.accessKey == "" && s.secretKey != "":
		return usagef("a secret key without an access key: give --access-key or set %s", envAccessKey)
	case s.tlsCA != "" && s.tlsInsecure:
		return usagef("give --tls-ca (verify the server against it) or --tls-insecure (do not verify), not both")
	}
	s.creds = auth.Credentials{AccessKey: s.accessKey, SecretKey: s.secretKey}
	if s.tls || s.tlsCA != "" || s.tlsInsecure {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.tlsInsecure}
		if s.tlsCA != "" {
			pem, err := os.ReadFile(s.tlsCA)
			if err != nil {
				return usagef("--tls-ca: %v", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return usagef("--tls-ca %s: no PEM certificate in it", s.tlsCA)
			}
			cfg.RootCAs = pool
		}
		s.tlsCfg = cfg
	}
	s.prepared = true
	return nil
}

// signed reports whether requests are signed.
func (s *security) signed() bool { return s != nil && !s.creds.IsZero() }

// overTLS reports whether connections speak TLS.
func (s *security) overTLS() bool { return s != nil && s.tlsCfg != nil }

// clientOptions are the remoting options of every connection: the
// signing hook and the TLS configuration. A nil s is plaintext, unsigned.
func (s *security) clientOptions() remoting.ClientOptions {
	if s == nil {
		return remoting.ClientOptions{}
	}
	return remoting.ClientOptions{Sign: s.creds.Signer(), TLS: s.tlsCfg}
}

// describe says how the connections go, for reports: never a secret.
func (s *security) describe() string {
	out := "plaintext"
	switch {
	case s.overTLS() && s.tlsCfg.InsecureSkipVerify:
		out = "TLS (server not verified)"
	case s.overTLS():
		out = "TLS"
	}
	if s.signed() {
		return out + ", signed as " + s.creds.AccessKey
	}
	return out + ", unsigned"
}

// errOfficialTLS explains why the official Go client needs --tls-insecure.
var errOfficialTLS = errors.New("the official RocketMQ Go client cannot verify the server's certificate (it dials TLS with verification off): " +
	"add --tls-insecure to accept that, or use --client native, which verifies")

// officialTLS is the official Go client's WithTls value: it speaks TLS but
// never verifies the server, so --tls alone (which promises verification)
// is refused. Its TLS switch is process-global in that client: every
// official client this process starts must pass the same value.
func (s *security) officialTLS() (bool, error) {
	if !s.overTLS() {
		return false, nil
	}
	if !s.tlsCfg.InsecureSkipVerify {
		return false, usageErr(errOfficialTLS)
	}
	return true, nil
}

// officialCredentials are the credentials in the official Go client's
// type (IsEmpty when unsigned).
func (s *security) officialCredentials() primitive.Credentials {
	if !s.signed() {
		return primitive.Credentials{}
	}
	return primitive.Credentials{AccessKey: s.creds.AccessKey, SecretKey: s.creds.SecretKey}
}

// tlsHint is the next step for a TLS failure, or "".
func tlsHint(err error) string {
	var verr *tls.CertificateVerificationError
	var rerr tls.RecordHeaderError
	switch {
	case errors.As(err, &verr):
		return "the server's certificate is not trusted: give --tls-ca FILE with its CA (or the server's self-signed certificate), " +
			"or --tls-insecure to skip verifying it"
	case errors.As(err, &rerr), strings.Contains(err.Error(), "TLS handshake") &&
		(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)):
		return "the server does not answer TLS (it cut the handshake off): drop --tls for a plaintext server, or start it with TLS on"
	}
	return ""
}

// childEnv is the environment of a child wheelctl that should sign as
// this one does: the credentials go in the environment, never on a
// command line (which other users can read). Nil: this process's own.
func (s *security) childEnv() []string {
	if !s.signed() {
		return nil
	}
	return append(os.Environ(), envAccessKey+"="+s.creds.AccessKey, envSecretKey+"="+s.creds.SecretKey)
}

// String keeps the secret out of any accidental print of the flags.
func (s *security) String() string { return fmt.Sprintf("security(%s)", s.describe()) }
