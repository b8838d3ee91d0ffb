package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigMistakeStopsStart: the real binary, given a configuration file
// with a typo, exits 2 before opening anything, naming the file, the line,
// the key and the key meant; a broker.conf's bad lines are all named, the
// one that is not UTF-8 with its own number.
func TestConfigMistakeStopsStart(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	cases := []struct {
		name, file, text string
		want             []string // ":line: what"
	}{
		{"yaml typo", "wheelmq.yaml", "data: DATA\nmetrics-listen: \"\"\nflsuh: sync\n",
			[]string{`:3: unknown key "flsuh": not a wheelmq flag; did you mean flush?`}},
		{"broker.conf", "broker.conf", "brokerName=a\nflushDiskTpye=SYNC_FLUSH\nstorePathRootDir=DATA\n\n# comment\nbrokerIP1=caf\xe9\nlistenPort=70000\n",
			[]string{`:2: unknown key "flushDiskTpye"`, ":6: not UTF-8 text (a byte 0xe9 at column 14)", ":7: listenPort=\"70000\""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			conf := writeConf(t, c.file, strings.ReplaceAll(c.text, "DATA", data))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "--config", conf, "--listen", "127.0.0.1:0", "--namesrv-listen", "127.0.0.1:0",
				"--grpc-listen", "", "--metrics-listen", "")
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit %v, want status 2; stderr:\n%s", err, stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), conf+w) {
					t.Errorf("stderr does not name %q:\n%s", conf+w, stderr.String())
				}
			}
			if strings.Contains(stderr.String(), "\"level\"") {
				t.Errorf("the broker logged (it started) before refusing:\n%s", stderr.String())
			}
		})
	}
}
