package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/netloop"
)

func TestParseArgsTLS(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        []string
		env         map[string]string
		mode        netloop.TLSMode
		namesrv     bool
		cert, ca    string
		wantProblem string
	}{
		{name: "default", mode: netloop.TLSPermissive},
		{name: "enforcing talks TLS to name servers", args: []string{"--tls-mode", "enforcing"}, mode: netloop.TLSEnforcing, namesrv: true},
		{name: "enforcing, namesrv plaintext", args: []string{"--tls-mode=enforcing", "--tls-namesrv=false"}, mode: netloop.TLSEnforcing},
		{name: "permissive, namesrv TLS", args: []string{"--tls-namesrv"}, mode: netloop.TLSPermissive, namesrv: true},
		{name: "from the environment", env: map[string]string{"WHEELMQ_TLS_MODE": "disabled", "WHEELMQ_TLS_NAMESRV": "auto"}},
		{name: "files", args: []string{"--tls-mode", "ENFORCING", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-client-ca", "ca.pem"},
			mode: netloop.TLSEnforcing, namesrv: true, cert: "c.pem", ca: "ca.pem"},
		{name: "namesrv mode takes them", args: []string{"namesrv", "--tls-mode", "enforcing"}, mode: netloop.TLSEnforcing, namesrv: true},
		{name: "unknown mode", args: []string{"--tls-mode", "strict"}, wantProblem: `tls mode "strict"`},
		{name: "cert without key", args: []string{"--tls-cert", "c.pem"}, wantProblem: "both --tls-cert and --tls-key"},
		{name: "client CA while permissive", args: []string{"--tls-client-ca", "ca.pem"}, wantProblem: "--tls-client-ca needs --tls-mode enforcing"},
		{name: "cert while disabled", args: []string{"--tls-mode", "disabled", "--tls-cert", "c", "--tls-key", "k"},
			wantProblem: "need --tls-mode permissive or enforcing"},
		{name: "bad namesrv", args: []string{"--tls-namesrv=maybe"}, wantProblem: "want true, false or auto"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseArgs(append(tc.args, "--data", "/d"), env(tc.env), io.Discard)
			if tc.wantProblem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantProblem) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.wantProblem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := o.node.TLS
			if got.Mode != tc.mode || got.Namesrv != tc.namesrv || got.CertFile != tc.cert || got.ClientCAFile != tc.ca ||
				got.Dir != filepath.Join("/d", "tls") {
				t.Fatalf("TLS config %+v", got)
			}
		})
	}
}
