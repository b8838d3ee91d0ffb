package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestParseArgsGRPCListen: without --grpc-listen the endpoint takes
// --listen's host with port 8081 and may move aside; given on the command
// line, in the environment or in a configuration file it is taken as it
// is (a taken port then fails the start); empty turns it off.
func TestParseArgsGRPCListen(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		env         map[string]string
		listen      string
		movesAside  bool
		wantProblem string
	}{
		{name: "default", listen: "0.0.0.0:8081", movesAside: true},
		{name: "listen host", args: []string{"broker", "--namesrv", "n:1", "--listen", "127.0.0.1:20911"}, listen: "127.0.0.1:8081", movesAside: true},
		{name: "ipv6 listen host", args: []string{"--listen", "[::1]:20911"}, listen: "[::1]:8081", movesAside: true},
		{name: "flag", args: []string{"--grpc-listen", "127.0.0.1:9999"}, listen: "127.0.0.1:9999"},
		{name: "flag with the default value", args: []string{"--grpc-listen", "0.0.0.0:8081"}, listen: "0.0.0.0:8081"},
		{name: "env", env: map[string]string{"WHEELMQ_GRPC_LISTEN": "127.0.0.1:9998"}, listen: "127.0.0.1:9998"},
		{name: "off", args: []string{"--grpc-listen="}, listen: ""},
		{name: "bad advertise", args: []string{"--grpc-advertise", "nope"}, wantProblem: "--grpc-advertise"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseArgs(tc.args, env(tc.env), io.Discard)
			if tc.wantProblem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantProblem) {
					t.Fatalf("want a problem naming %s, got %v", tc.wantProblem, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := o.node.GRPC; g.Listen != tc.listen || g.ListenIsDefault != tc.movesAside {
				t.Fatalf("grpc listen %q (default %v), want %q (%v)", g.Listen, g.ListenIsDefault, tc.listen, tc.movesAside)
			}
		})
	}
}

// TestParseArgsGRPCListenFromFile: a configuration file's grpc-listen is
// an address asked for, as the flag is.
func TestParseArgsGRPCListenFromFile(t *testing.T) {
	path := t.TempDir() + "/wheelmq.yaml"
	if err := os.WriteFile(path, []byte("grpc-listen: 127.0.0.1:9997\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := parseArgs([]string{"--config", path}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if g := o.node.GRPC; g.Listen != "127.0.0.1:9997" || g.ListenIsDefault {
		t.Fatalf("grpc listen %q (default %v)", g.Listen, g.ListenIsDefault)
	}
}
