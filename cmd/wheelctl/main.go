// Command wheelctl is wheelmq's admin and load tool.
//
//	wheelctl bench [flags]     send throughput with the official Go client,
//	                           wheelmq side by side with an ack-only peer
//	wheelctl bench-timer [flags]
//	                           timer messages: enqueue rate, lateness, bursts,
//	                           memory, disk and restart with many pending
//	wheelctl send [flags]      send messages
//	wheelctl consume [flags]   consume and print messages
//	wheelctl cancel [flags]    cancel a pending timer message
//
// Run "wheelctl <command> -h" for the flags of each command.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "bench":
		err = runBench(args[1:], stdout, stderr)
	case "bench-timer":
		err = runBenchTimer(args[1:], stdout, stderr)
	case "send":
		err = runSend(args[1:], stdout, stderr)
	case "consume":
		err = runConsume(args[1:], stdout, stderr)
	case "cancel":
		err = runCancel(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "wheelctl: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "wheelctl %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: wheelctl <command> [flags]

commands:
  bench     send throughput of wheelmq against an ack-only peer, side by side
  bench-timer
            timer messages: enqueue rate, lateness, 500k-in-a-second bursts,
            memory/disk/restart with millions pending
  send      send messages to a topic
  consume   consume a topic and print the messages
  cancel    cancel a pending timer message by its offset message id
`)
}
