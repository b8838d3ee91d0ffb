package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
)

// Defaults of the global flags; WHEELMQ_NAMESRV, WHEELMQ_BROKER and
// WHEELMQ_METRICS override them (envPrefix).
const (
	defaultNamesrv = "127.0.0.1:9876"
	defaultMetrics = "http://127.0.0.1:9108/metrics"
)

// globals are the flags every command has.
type globals struct {
	namesrv string
	broker  string
	timeout time.Duration
	sec     security // credentials and TLS of every connection
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
}

// session opens an admin session with the request timeout, the
// credentials and TLS.
func (g *globals) session() *admin.Session {
	return &admin.Session{Timeout: g.timeout, Options: g.sec.clientOptions()}
}

// envPrefix is the prefix of wheelctl's environment variables, the one
// wheelmq's own settings have (WHEELMQ_ACCESS_KEY, WHEELMQ_NAMESRV: one
// export serves both); oldEnvPrefix is the deprecated alias of the
// variables that had it (WHEELCTL_NAMESRV, WHEELCTL_BROKER,
// WHEELCTL_METRICS), still read, with a notice on stderr.
const (
	envPrefix    = "WHEELMQ_"
	oldEnvPrefix = "WHEELCTL_"
)

// deprecatedEnv are the deprecated variables read by this process, for the
// notice (deprecationNotice).
var deprecatedEnv []string

// envOr returns the environment variable envPrefix+name, or its deprecated
// alias oldEnvPrefix+name (recorded for the notice), or def when neither
// is set.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(envPrefix + name); ok {
		return v
	}
	if v, ok := os.LookupEnv(oldEnvPrefix + name); ok {
		if !slices.Contains(deprecatedEnv, oldEnvPrefix+name) {
			deprecatedEnv = append(deprecatedEnv, oldEnvPrefix+name)
		}
		return v
	}
	return def
}

// deprecationNotice prints one line per deprecated variable read.
func deprecationNotice(stderr io.Writer) {
	for _, k := range deprecatedEnv {
		fmt.Fprintf(stderr, "wheelctl: %s is deprecated: set %s%s instead (read this time)\n", k, envPrefix, strings.TrimPrefix(k, oldEnvPrefix))
	}
}

// newRoot builds the command tree.
func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	rlog.SetLogLevel("error") // the official client's own logging
	deprecatedEnv = nil
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "wheelctl",
		Short: "Operate a wheelmq broker: topics, groups, messages, a live view and benchmarks",
		Long: `wheelctl talks to a wheelmq broker (or any RocketMQ 4/5 broker for the admin requests it serves)
through its name server, its broker port and its /metrics endpoint.

Against a broker and name server with ACL on, give an account with --access-key and --secret-key
(or WHEELMQ_ACCESS_KEY and WHEELMQ_SECRET_KEY): every request of every command is then signed. With
--tls every connection speaks TLS and verifies the server's certificate (the system's CAs, or
--tls-ca FILE for a private CA or a server's self-signed certificate); --tls-insecure skips the
verification. The official Go client (--client official, consume) cannot verify: it needs
--tls-insecure.

Exit codes: 0 success, 1 failure, 2 bad usage.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			deprecationNotice(stderr)
			return g.sec.prepare(cmd)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	pf := root.PersistentFlags()
	pf.StringVar(&g.namesrv, "namesrv", envOr("NAMESRV", defaultNamesrv), "name server address host:port, or several separated by ';' (tried in turn; env WHEELMQ_NAMESRV)")
	pf.StringVar(&g.broker, "broker", envOr("BROKER", ""),
		"broker address, host:port (default: the brokers the name server knows; env WHEELMQ_BROKER)")
	pf.DurationVar(&g.timeout, "timeout", admin.DefaultTimeout, "deadline of each request to the broker or name server")
	g.sec.addFlags(pf)

	root.AddGroup(&cobra.Group{ID: "admin", Title: "Administration:"},
		&cobra.Group{ID: "msg", Title: "Messages:"}, &cobra.Group{ID: "watch", Title: "Watching:"},
		&cobra.Group{ID: "bench", Title: "Benchmarks:"})
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("admin", newTopicCmd(g), newGroupCmd(g), newClusterCmd(g), newStoreCmd(g), newUserCmd(g), newACLCmd(g))
	add("msg", newSendCmd(g), newConsumeCmd(g), newCancelCmd(g), newTimersCmd(g), newMessageCmd(g))
	add("watch", newTopCmd(g), newStatsCmd(g))
	add("bench", newBenchCmd(g))
	root.AddCommand(newBenchTimerAlias(g))
	return root
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if cmd.HasSubCommands() {
			return usageErr(fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath()))
		}
		return usageErr(fmt.Errorf("unexpected argument %q", args[0]))
	}
	return nil
}

// exactArgs wants n positional arguments, named in the error.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageErr(fmt.Errorf("want %d argument(s) (%v), got %d", len(names), names, len(args)))
		}
		return nil
	}
}

// groupCmd is a command that only holds subcommands.
func groupCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(subs...)
	return c
}
