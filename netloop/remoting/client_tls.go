package remoting

import "crypto/tls"

// InsecureTLS is the client TLS configuration of RocketMQ's clients (the
// official Go client's WithTls, the Java client's default test mode): TLS
// 1.2 or newer, the server's certificate not verified. Give a
// configuration with RootCAs to verify it.
func InsecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // RocketMQ's client behaviour, documented
}
