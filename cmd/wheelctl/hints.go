package main

// Hints for the errors whose message sends users the wrong way: a
// plaintext client cut off by a port that enforces TLS (the server closes
// the connection without a word), and ACL refusals (which account, which
// flag). They take precedence over a command's own generic hint ("check
// --namesrv"), which would send the user after the name server instead.

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/wheelmq/wheelmq/cmd/internal/suggest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// credFlags names the flags (and variables) of the credentials.
const credFlags = "--access-key and --secret-key (or " + envAccessKey + " and " + envSecretKey + ")"

// connHint is the hint for a TLS mismatch or an ACL refusal in err, or "".
// plaintext says whether this command spoke plaintext.
func connHint(err error, plaintext bool) string {
	if h := tlsHint(err); h != "" {
		return h
	}
	if plaintext && errors.Is(err, remoting.ErrClosed) &&
		(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)) {
		return "the server closed the connection without answering, as a port that enforces TLS does with a plaintext client: " +
			"add --tls (with --tls-ca FILE to trust the server's certificate, e.g. a wheelmq's <data>/tls/self-signed.crt, or --tls-insecure)"
	}
	return aclHint(err.Error())
}

// aclHint reads the remark of an ACL refusal ("[ACL] ...", netloop/auth)
// in msg and says which credentials to give.
func aclHint(msg string) string {
	if !strings.Contains(msg, "[ACL]") {
		return ""
	}
	switch {
	case strings.Contains(msg, "anonymous request refused"):
		return "the server has access control on: give an account with " + credFlags
	case strings.Contains(msg, "signature does not match"):
		return "the server does not know this access key, or the secret key is not its: check " + credFlags + " against its ACL file"
	case strings.Contains(msg, "needs an admin account"):
		return "this command needs an admin account: give one with " + credFlags
	case strings.Contains(msg, "may not be used from"):
		return "the account's whiteRemoteAddress does not cover this machine: run from an address it allows, or use another account"
	case strings.Contains(msg, ": no "):
		return "the account lacks the permission named: have it added to the account (topicPerms/groupPerms) or give another account with " + credFlags
	}
	return "the server refused the account: check " + credFlags
}

// plaintext reports whether cmd speaks plaintext (no --tls, --tls-ca or
// --tls-insecure).
func plaintext(cmd *cobra.Command) bool {
	if cmd == nil {
		return true
	}
	for _, n := range []string{"tls", "tls-ca", "tls-insecure"} {
		if f := cmd.Flag(n); f != nil && f.Changed {
			return false
		}
	}
	return true
}

// flagError is the commands' flag error: a usage error, with the flag
// probably meant when an unknown one is close to one of the command's
// ("unknown flag: --namsrv; did you mean --namesrv?").
func flagError(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return usageErr(err)
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if s := suggest.DidYouMean(name, names, "--"); s != "" {
		return usageErr(fmt.Errorf("%w%s", err, s))
	}
	return usageErr(err)
}
