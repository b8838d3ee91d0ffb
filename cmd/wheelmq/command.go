package main

// The command line's shape: "wheelmq [broker|namesrv] [flags]", as cobra
// commands (the CLI library wheelctl uses), each with its own help that
// lists the flags meaning something in that mode. The flags themselves are
// defined once, on a standard-library flag.FlagSet (flags.go), so that the
// configuration file and the WHEELMQ_* environment set the very same
// values; each command adopts the set's flags, hiding the ones of other
// modes (given anyway, they are reported as meaning nothing there).

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// modeHelp is each mode's one-line and long description.
var modeHelp = map[string][2]string{
	"all": {"Run a broker with an embedded name server (the default)",
		`wheelmq runs a RocketMQ-compatible broker with arbitrary-time timer messages.

Without a mode it runs a broker and an embedded name server in one process:
the two-command start (go run ./cmd/wheelmq) is this. "wheelmq broker" runs a
broker that registers with the name servers given by --namesrv, and "wheelmq
namesrv" a name server alone (with --controller-listen, one of the
controllers that elect the masters of replicated broker groups).

Every flag can also be set as WHEELMQ_<FLAG> in the environment (dashes as
underscores) or in the file given with --config (a RocketMQ broker.conf, or
YAML with the flag names as keys). The command line wins over the
environment, which wins over the file. docs/operations.md has the details.`},
	"broker": {"Run a broker that registers with --namesrv",
		`wheelmq broker runs a broker without a name server of its own: it registers
with every name server in --namesrv ('host:port;host:port').

With --replication controller it is a member of a replicated broker group
(--broker-name): the controllers in the name servers elect its master, the
CommitLog streams to the replicas over --ha-listen, and a send is
acknowledged once every member of the sync-state set holds it
(docs/operations.md, "Replicated broker groups").`},
	"namesrv": {"Run a name server alone",
		`wheelmq namesrv runs a name server alone, listening on --listen. Its KV
configuration is kept in <--data>/namesrv.

With --controller-listen and --controller-peers (the same list on every name
server) it is also one of the controllers: a Raft group (hashicorp/raft)
that elects the masters of replicated broker groups and keeps their
sync-state sets (docs/operations.md, "Replicated broker groups").`},
}

// parseCommandLine parses args as "wheelmq [broker|namesrv] [flags]" into
// fs's values. It returns the mode ("all", "broker" or "namesrv") and the
// flags given on the command line; errHelp when help was asked for (and
// printed to stderr).
func parseCommandLine(fs *flag.FlagSet, args []string, stderr io.Writer) (mode string, set map[string]bool, err error) {
	set = map[string]bool{}
	parsed := false
	run := func(m string) func(*cobra.Command, []string) error {
		return func(c *cobra.Command, _ []string) error {
			mode, parsed = m, true
			c.Flags().Visit(func(f *pflag.Flag) { set[f.Name] = true })
			return nil
		}
	}
	root := newModeCommand(fs, "all", "wheelmq", run("all"))
	root.SilenceErrors, root.SilenceUsage = true, true
	root.CompletionOptions.DisableDefaultCmd = true
	for _, m := range []string{"broker", "namesrv"} {
		root.AddCommand(newModeCommand(fs, m, m, run(m)))
	}
	root.SetArgs(args)
	root.SetOut(stderr)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		return "", nil, err
	}
	if !parsed { // --help or help <mode>
		return "", nil, errHelp
	}
	return mode, set, nil
}

// newModeCommand is the command of one mode, with every flag of fs: the
// mode's own visible, the others hidden.
func newModeCommand(fs *flag.FlagSet, mode, use string, run func(*cobra.Command, []string) error) *cobra.Command {
	help := modeHelp[mode]
	c := &cobra.Command{
		Use: use + " [flags]", Short: help[0], Long: help[1], RunE: run,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				if mode == "all" {
					return fmt.Errorf("unknown mode %q (want broker or namesrv, or none for both)", args[0])
				}
				return fmt.Errorf("unexpected arguments: %v", args)
			}
			return nil
		},
		DisableFlagsInUseLine: true,
	}
	allowed, limited := modeFlags[mode]
	fs.VisitAll(func(f *flag.Flag) {
		c.Flags().AddGoFlag(f)
		if limited && !slices.Contains(allowed, f.Name) && !slices.Contains(tlsFlagNames, f.Name) {
			_ = c.Flags().MarkHidden(f.Name)
		}
	})
	return c
}

// isHelp reports whether err is the help request.
func isHelp(err error) bool { return errors.Is(err, errHelp) }
