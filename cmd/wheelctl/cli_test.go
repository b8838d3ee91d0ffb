package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/portres"
)

// runCLI runs one wheelctl command line in this process.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestHelpExitsZero(t *testing.T) {
	tests := [][]string{
		{"--help"}, {}, {"send", "--help"}, {"consume", "-h"}, {"topic", "create", "--help"}, {"topic"},
		{"group", "describe", "--help"}, {"cluster", "list", "--help"}, {"top", "--help"}, {"stats", "--help"},
		{"bench", "produce", "--help"}, {"bench", "timer", "--help"}, {"help", "cancel"},
		{"completion", "bash"}, {"completion", "zsh"}, {"completion", "fish"},
	}
	for _, args := range tests {
		out, errOut, code := runCLI(t, args...)
		if code != 0 || out == "" || errOut != "" {
			t.Errorf("%v: exit %d, %d bytes out, stderr %q; want exit 0 with output", args, code, len(out), errOut)
		}
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"send", "--nope"}, "unknown flag: --nope"},
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"topic", "nope"}, `unknown command "nope"`},
		{[]string{"send"}, `required flag(s) "topic" not set`},
		{[]string{"send", "--topic", "t", "--delay", "1s", "--at", "2026-12-01T09:00:00Z"}, "not both"},
		{[]string{"send", "--topic", "t", "--at", "tomorrow"}, "RFC 3339"},
		{[]string{"send", "--topic", "t", "--count", "x"}, "invalid argument"},
		{[]string{"topic", "create"}, "want 1 argument"},
		{[]string{"topic", "create", "t", "--perm", "x"}, "--perm"},
		{[]string{"topic", "create", "t", "--cluster", "DefaultCluster", "--broker", "127.0.0.1:1"}, "not both"},
		{[]string{"consume", "--topic", "t", "--from", "middle"}, "want first or last"},
		{[]string{"consume", "--topic", "t", "--tag-expr", "a", "--sql", "b > 1"}, "not both"},
		{[]string{"cancel", "--msg-id", "xyz"}, "not an offset message id"},
		{[]string{"cancel"}, "give one of --msg-id and --recall-handle"},
		{[]string{"cancel", "--recall-handle", "bm90IGEgaGFuZGxl"}, "recall handle is invalid"},
		{[]string{"bench", "produce", "--mode", "fast"}, "want sync, async or oneway"},
		{[]string{"bench", "consume", "--size", "8"}, "--size 8"},
		{[]string{"bench", "produce", "--producers", "2", "--clients", "3"}, "--clients between"},
		{[]string{"top", "--interval", "1ms"}, "at least 100ms"},
	}
	for _, tt := range tests {
		out, errOut, code := runCLI(t, tt.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.want) ||
			!strings.Contains(errOut, "--help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", tt.args, code, out, errOut, tt.want)
		}
	}
}

// closedAddr returns a loopback address nothing listens on: a port this
// test holds (portres.Hold), so no other test's server appears there.
func closedAddr(t *testing.T) string {
	t.Helper()
	return portres.Hold(t)
}

func TestUnreachableIsOneLine(t *testing.T) {
	addr := closedAddr(t)
	tests := [][]string{
		{"topic", "list", "--namesrv", addr},
		{"cluster", "list", "--namesrv", addr},
		{"group", "describe", "g", "--broker", addr},
		{"stats", "--metrics", "http://" + addr + "/metrics"},
		{"top", "--once", "--metrics", "http://" + addr + "/metrics"},
	}
	for _, args := range tests {
		_, errOut, code := runCLI(t, args...)
		if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, addr) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and one line naming %s", args, code, errOut, addr)
		}
	}
}

func TestTopNeedsATerminal(t *testing.T) {
	_, errOut, code := runCLI(t, "top")
	if code != 1 || !strings.Contains(errOut, "--once") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
