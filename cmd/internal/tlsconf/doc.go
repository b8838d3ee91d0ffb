// Package tlsconf holds a wheelmq process's TLS material: the server
// certificate and key (the operator's files, or a self-signed certificate
// made once in the data directory), the CA that client certificates must
// chain to, and the tls.Config of every remoting port and of the
// process's own connections to name servers. A Reloader polls the files
// (stat, once a second by default) and swaps a new snapshot in when they
// change; handshakes take the snapshot in force when they begin
// (tls.Config.GetConfigForClient), so a new certificate is served without
// a restart and connections already open keep theirs. A file that does
// not load keeps the last good snapshot and the warning says why.
//
// Every configuration here accepts TLS 1.2 and newer only.
//
// Self-signed certificate files (see docs/operations.md, "TLS"):
//
//	<dir>/self-signed.key  PKCS#8 "PRIVATE KEY" PEM of an ECDSA P-256 key, mode 0600
//	<dir>/self-signed.crt  "CERTIFICATE" PEM, valid 5 years, server and client auth,
//	                       SANs localhost, 127.0.0.1, ::1, the advertised host, the hostname
//
// Both are written with vfs.WriteFileAtomic (the key first) and made again
// only when they do not load or expire within 30 days.
package tlsconf
