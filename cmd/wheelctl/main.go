// Command wheelctl is wheelmq's command-line tool: admin requests,
// messages, a live view of a broker and benchmarks.
//
//	wheelctl topic create|list|describe|delete   topics on the brokers
//	wheelctl group list|describe|reset           consumer groups, their lag, offset resets
//	wheelctl message show|query                  messages by id or key, who consumed them
//	wheelctl user create|update|delete|get|list  ACL 2.0 users of the brokers
//	wheelctl acl create|update|delete|get|list   ACL 2.0 policies of the brokers
//	wheelctl cluster list                        brokers known to the name server
//	wheelctl stats                               a broker's figures from /metrics
//	wheelctl top                                 live view of stages, timers, store
//	wheelctl send | consume | cancel             messages, timer messages included
//	wheelctl bench produce|consume|timer         throughput and latency
//	wheelctl completion bash|zsh|fish|powershell shell completion
//
// Every connection of every command is signed with --access-key and
// --secret-key (or WHEELMQ_ACCESS_KEY and WHEELMQ_SECRET_KEY) and speaks
// TLS with --tls (--tls-ca FILE, --tls-insecure); see security.go.
//
// Run "wheelctl <command> --help" for each command's flags. Exit codes: 0
// success, 1 failure, 2 bad usage (unknown command or flag, bad value).
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one wheelctl command line and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return exitCode(stderr, cmd, err)
}
