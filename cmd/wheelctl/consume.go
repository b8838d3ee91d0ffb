package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
)

// consumeOptions are the flags of consume.
type consumeOptions struct {
	topic, group, tagExpr, sql, from string
	count, preview                   int
	timeout                          time.Duration
}

func newConsumeCmd(g *globals) *cobra.Command {
	var o consumeOptions
	c := &cobra.Command{
		Use:   "consume --topic TOPIC [--group G] [--tag-expr EXPR | --sql EXPR] [--from first|last]",
		Short: "Consume a topic and print the messages",
		Long: `Consume with the official RocketMQ Go client (a push consumer in clustering mode) and print
each message: topic, queue, offset, ids, keys, tags, born and store times, and a body preview.
Timer messages also show their due time and how late they arrived. It signs with --access-key and
--secret-key; over TLS it needs --tls-insecure, as the official client cannot verify the server.

--from applies to a group that has no committed offset yet. Without --count and --wait it runs
until interrupted (Ctrl-C). (--wait was --timeout, which is every other command's request deadline:
consume --timeout still works as --wait, with a notice.)`,
		Example: `  wheelctl consume --topic orders
  wheelctl consume --topic orders --group billing --tag-expr 'paid || refunded' --count 10
  wheelctl consume --topic orders --sql 'amount > 100' --from last --wait 30s`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("timeout") {
				fmt.Fprintln(g.stderr, "wheelctl consume: --timeout is deprecated here: use --wait (--timeout is the request deadline in every other command)")
			}
			return runConsume(cmd.Context(), g, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.topic, "topic", "", "topic to consume (required)")
	f.StringVar(&o.group, "group", "wheelctl_consume", "consumer group")
	f.StringVar(&o.tagExpr, "tag-expr", "*", "tag expression, e.g. 'TagA || TagB' (* for all)")
	f.StringVar(&o.sql, "sql", "", "SQL92 filter on properties instead of tags, e.g. \"a > 5 AND b = 'x'\"")
	f.StringVar(&o.from, "from", "first", "where a new group starts: first or last")
	f.IntVar(&o.count, "count", 0, "stop after this many messages (0: no limit)")
	f.DurationVar(&o.timeout, "wait", 0, "stop after this long (0: no limit); with --count, fewer messages is a failure")
	// The old name of --wait, which shadowed the global --timeout (the
	// request deadline): still read, with a notice on stderr.
	f.DurationVar(&o.timeout, "timeout", 0, "deprecated name of --wait")
	_ = f.MarkDeprecated("timeout", "use --wait (--timeout is the request deadline in every other command)")
	f.IntVar(&o.preview, "preview", 80, "body bytes to show")
	_ = c.MarkFlagRequired("topic")
	_ = c.RegisterFlagCompletionFunc("topic", completeTopics(g))
	_ = c.RegisterFlagCompletionFunc("from", fixedCompletion("first", "last"))
	return c
}

func runConsume(ctx context.Context, g *globals, o consumeOptions) error {
	sel := consumer.MessageSelector{Type: consumer.TAG, Expression: o.tagExpr}
	if o.sql != "" {
		if o.tagExpr != "*" {
			return usagef("give --tag-expr or --sql, not both")
		}
		sel = consumer.MessageSelector{Type: consumer.SQL92, Expression: o.sql}
	}
	from := consumer.ConsumeFromFirstOffset
	switch o.from {
	case "first":
	case "last":
		from = consumer.ConsumeFromLastOffset
	default:
		return usagef("--from %q: want first or last", o.from)
	}
	if o.count < 0 || o.timeout < 0 || o.preview < 0 {
		return usagef("--count, --wait and --preview cannot be negative")
	}
	secOpts, err := officialConsumerOptions(&g.sec)
	if err != nil {
		return err
	}
	c, err := consumer.NewPushConsumer(append([]consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver(admin.NameServers(g.namesrv))),
		consumer.WithGroupName(o.group),
		consumer.WithInstance(fmt.Sprintf("wheelctl-%d", time.Now().UnixNano())),
		consumer.WithConsumeFromWhere(from),
	}, secOpts...)...)
	if err != nil {
		return fmt.Errorf("new consumer: %w", err)
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	var mu sync.Mutex
	seen := 0
	enough := make(chan struct{})
	err = c.Subscribe(o.topic, sel, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		arrival := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if o.count > 0 && seen+len(msgs) > o.count {
			// Past --count (batches are of one message by default): not
			// acknowledged, so the group sees them again later.
			return consumer.ConsumeRetryLater, nil
		}
		for _, m := range msgs {
			seen++
			fmt.Fprint(g.stdout, formatMessage(seen, m, arrival, o.preview))
		}
		if o.count > 0 && seen == o.count {
			close(enough)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", o.topic, err)
	}
	if err := c.Start(); err != nil {
		return withHint(fmt.Errorf("start consumer: %w", err), "check --namesrv "+g.namesrv+" and that the topic exists")
	}
	select {
	case <-enough:
	case <-ctx.Done():
	}
	_ = c.Shutdown()
	mu.Lock()
	defer mu.Unlock()
	if o.count > 0 && seen < o.count {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("received %d of %d messages within %s (--wait)", seen, o.count, o.timeout)
		}
		return fmt.Errorf("interrupted after %d of %d messages", seen, o.count)
	}
	return nil
}

// officialConsumerOptions are the official Go client's options for the
// credentials and TLS (see security.officialTLS).
func officialConsumerOptions(sec *security) ([]consumer.Option, error) {
	useTLS, err := sec.officialTLS()
	if err != nil {
		return nil, err
	}
	// Always given: WithTls writes a process-global, so each client sets it.
	opts := []consumer.Option{consumer.WithTls(useTLS)}
	if c := sec.officialCredentials(); !c.IsEmpty() {
		opts = append(opts, consumer.WithCredentials(c))
	}
	return opts, nil
}
