package main

// The TLS flags (docs/operations.md, "TLS"), kept apart from the others:
// they apply to every remoting port of the process, in every mode.

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/netloop"
)

// tlsFlagNames are the TLS flags, which mean something in every mode.
var tlsFlagNames = []string{"tls-mode", "tls-cert", "tls-key", "tls-client-ca", "tls-namesrv"}

// tlsFlags are the TLS flags' values.
type tlsFlags struct {
	mode, cert, key, clientCA *string
	namesrv                   autoBool
}

// defineTLSFlags adds the TLS flags to fs.
func defineTLSFlags(fs *flag.FlagSet) *tlsFlags {
	f := &tlsFlags{
		mode: fs.String("tls-mode", "permissive",
			"TLS on the broker and name server ports: disabled, permissive (TLS and plaintext on the same port) or enforcing (TLS only)"),
		cert: fs.String("tls-cert", "", "server certificate (PEM, chain after the leaf); empty: a self-signed one made once in <data>/tls"),
		key:  fs.String("tls-key", "", "the server certificate's private key (PEM)"),
		clientCA: fs.String("tls-client-ca", "",
			"CA bundle (PEM): every client must then present a certificate it signed (mutual TLS)"),
	}
	fs.Var(&f.namesrv, "tls-namesrv",
		"speak TLS to the name servers the broker registers with: true, false, or auto (TLS when --tls-mode is enforcing)")
	return f
}

// apply puts the TLS settings into the process configuration and returns
// the problems found.
func (f *tlsFlags) apply(node *process.Config, dataDir string) []string {
	var problems []string
	mode, err := netloop.ParseTLSMode(*f.mode)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if (*f.cert == "") != (*f.key == "") {
		problems = append(problems, "give both --tls-cert and --tls-key, or neither (a self-signed certificate)")
	}
	if mode == netloop.TLSDisabled && (*f.cert != "" || *f.clientCA != "") {
		problems = append(problems, "--tls-cert and --tls-client-ca need --tls-mode permissive or enforcing")
	}
	if mode != netloop.TLSEnforcing && *f.clientCA != "" {
		// Permissive would let any client past the client-certificate
		// check by speaking plaintext.
		problems = append(problems, "--tls-client-ca needs --tls-mode enforcing (in permissive mode a plaintext client needs no certificate)")
	}
	node.TLS = process.TLSConfig{
		Mode: mode, CertFile: *f.cert, KeyFile: *f.key, ClientCAFile: *f.clientCA, Dir: process.TLSDir(dataDir),
		Namesrv: f.namesrv.resolve(mode == netloop.TLSEnforcing),
	}
	return problems
}

// autoBool is a flag that is true, false or auto (unset: auto). As a
// boolean flag, --name alone means true.
type autoBool struct {
	set, v bool
}

// String implements flag.Value.
func (b *autoBool) String() string {
	if b == nil || !b.set {
		return "auto"
	}
	return strconv.FormatBool(b.v)
}

// Set implements flag.Value.
func (b *autoBool) Set(s string) error {
	if strings.EqualFold(s, "auto") {
		b.set = false
		return nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true, false or auto")
	}
	b.set, b.v = true, v
	return nil
}

// IsBoolFlag lets --name stand for --name=true.
func (b *autoBool) IsBoolFlag() bool { return true }

// resolve is the value, auto meaning def.
func (b *autoBool) resolve(def bool) bool {
	if !b.set {
		return def
	}
	return b.v
}
