package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
)

// fixedCompletion completes a flag from a fixed list.
func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTopics completes topic names from the name server (quietly
// nothing when it cannot be reached within a second).
func completeTopics(g *globals) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		if g.sec.prepare(cmd) != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s := g.session()
		defer s.Close()
		names, err := s.TopicNames(ctx, g.namesrv)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTopicArg completes the first positional argument with topics.
func completeTopicArg(g *globals) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	topics := completeTopics(g)
	return func(cmd *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return topics(cmd, args, s)
	}
}
