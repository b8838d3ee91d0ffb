package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
)

// usageError is a bad command line: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usageErr marks err as a usage error.
func usageErr(err error) error { return usageError{err} }

// usagef is a usage error from a format.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// hintError carries what the user should do next.
type hintError struct {
	err  error
	hint string
}

func (e hintError) Error() string { return e.err.Error() + "; " + e.hint }
func (e hintError) Unwrap() error { return e.err }

// withHint adds a next step to err.
func withHint(err error, hint string) error { return hintError{err, hint} }

// exitCode prints err as one line on stderr and returns the exit code.
func exitCode(stderr io.Writer, cmd *cobra.Command, err error) int {
	if err == nil {
		return 0
	}
	path := "wheelctl"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	var ue usageError
	if errors.As(err, &ue) || cobraUsage(err) {
		fmt.Fprintf(stderr, "%s: %s (see '%s --help')\n", path, oneLine(err.Error()), path)
		return 2
	}
	fmt.Fprintf(stderr, "%s: %s\n", path, oneLine(explain(err, plaintext(cmd)).Error()))
	return 1
}

// explain adds the usual next step to errors that lack one; a TLS
// mismatch or an ACL refusal (hints.go) replaces a command's generic hint.
func explain(err error, plaintext bool) error {
	if h := connHint(err, plaintext); h != "" {
		if he, ok := err.(hintError); ok {
			return withHint(he.err, h)
		}
		return withHint(err, h)
	}
	var he hintError
	if errors.As(err, &he) {
		return err
	}
	var unreachable *admin.UnreachableError
	switch {
	case errors.As(err, &unreachable):
		hint := "is wheelmq running there? start it with 'go run ./cmd/wheelmq', or point --namesrv/--broker at it"
		if errors.Is(err, syscall.ECONNREFUSED) {
			hint = "nothing listens there: start wheelmq ('go run ./cmd/wheelmq') or point --namesrv/--broker at it"
		}
		return withHint(err, hint)
	case errors.Is(err, context.Canceled):
		return errors.New("interrupted")
	}
	return err
}

// oneLine folds a multi-line message into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// cobraUsage recognises the usage errors cobra returns as plain errors.
func cobraUsage(err error) bool {
	for _, p := range []string{"unknown command", "required flag(s)", "if any flags in the group"} {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}
