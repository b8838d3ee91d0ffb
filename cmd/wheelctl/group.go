package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
)

func newGroupCmd(g *globals) *cobra.Command {
	return groupCmd("group", "List and create consumer groups (with their retry policy), show a group's progress and lag, reset its offsets",
		newGroupListCmd(g), newGroupCreateCmd(g), newGroupDescribeCmd(g), newGroupResetCmd(g))
}

func newGroupListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the consumer groups of the brokers (GET_ALL_SUBSCRIPTIONGROUP_CONFIG)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := g.session()
			defer s.Close()
			brokers, err := targetBrokers(cmd.Context(), s, g, "")
			if err != nil {
				return err
			}
			tw := newTable(g)
			fmt.Fprintln(tw, "GROUP\tBROKER\tCONSUME\tBROADCAST\tORDERLY\tRETRY MAX")
			for _, b := range brokers {
				groups, err := s.Groups(cmd.Context(), b.Addr)
				if err != nil {
					return err
				}
				names := make([]string, 0, len(groups))
				for n := range groups {
					names = append(names, n)
				}
				sort.Strings(names)
				for _, n := range names {
					gc := groups[n]
					fmt.Fprintf(tw, "%s\t%s\t%t\t%t\t%t\t%d\n", n, b.Name, gc.ConsumeEnable, gc.ConsumeBroadcastEnable,
						gc.ConsumeMessageOrderly, gc.RetryMaxTimes)
				}
			}
			return tw.Flush()
		},
	}
}

// progressRow is one queue of a group's progress.
type progressRow struct {
	mq admin.MessageQueue
	p  admin.QueueProgress
}

func newGroupDescribeCmd(g *globals) *cobra.Command {
	var topic string
	c := &cobra.Command{
		Use:   "describe GROUP [--topic TOPIC]",
		Short: "Show a group's per-queue broker offset, consumer offset, lag and last consume time",
		Long: `Show a consumer group's progress on each queue (GET_CONSUME_STATS) and its connected clients
(GET_CONSUMER_CONNECTION_LIST). Where a broker does not serve GET_CONSUME_STATS, --topic lets
wheelctl compute the lag from QUERY_CONSUMER_OFFSET and GET_MAX_OFFSET instead.`,
		Example: "  wheelctl group describe billing\n  wheelctl group describe billing --topic orders",
		Args:    exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return describeGroup(cmd.Context(), g, args[0], topic)
		},
	}
	c.Flags().StringVar(&topic, "topic", "", "only this topic (needed where the broker does not serve GET_CONSUME_STATS)")
	_ = c.RegisterFlagCompletionFunc("topic", completeTopics(g))
	return c
}

func describeGroup(ctx context.Context, g *globals, group, topic string) error {
	s := g.session()
	defer s.Close()
	var brokers []admin.Broker
	queues := map[string]int{} // by broker address, from the topic's route
	var err error
	if topic != "" && g.broker == "" {
		route, rerr := s.Route(ctx, g.namesrv, topic)
		if rerr != nil {
			return rerr
		}
		for _, qd := range route.Queues {
			if addr := route.Master(qd.BrokerName); addr != "" {
				brokers = append(brokers, admin.Broker{Name: qd.BrokerName, Addr: addr})
				queues[addr] = qd.ReadQueueNums
			}
		}
	} else if brokers, err = targetBrokers(ctx, s, g, ""); err != nil {
		return err
	}
	var rows []progressRow
	var notes []string
	var tps float64
	for _, b := range brokers {
		cs, err := s.ConsumeStats(ctx, b.Addr, group, topic)
		var ns *admin.NotServedError
		switch {
		case err == nil:
			tps += cs.ConsumeTps
			for mq, p := range cs.Queues {
				rows = append(rows, progressRow{mq, p})
			}
		case errors.As(err, &ns) && topic != "":
			computed, err := computeProgress(ctx, s, b, group, topic, queues[b.Addr])
			if err != nil {
				return err
			}
			rows = append(rows, computed...)
			notes = append(notes, fmt.Sprintf("lag computed from QUERY_CONSUMER_OFFSET and GET_MAX_OFFSET: %v, so no last consume time", ns))
		case errors.As(err, &ns):
			return withHint(err, "give --topic to compute the lag from QUERY_CONSUMER_OFFSET and GET_MAX_OFFSET")
		default:
			return fmt.Errorf("progress of %s on %s: %w", group, b.Addr, err)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i].mq, rows[j].mq
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.BrokerName != b.BrokerName {
			return a.BrokerName < b.BrokerName
		}
		return a.QueueID < b.QueueID
	})
	fmt.Fprintf(g.stdout, "group %s\n", group)
	tw := newTable(g)
	fmt.Fprintln(tw, "TOPIC\tBROKER\tQUEUE\tBROKER OFFSET\tCONSUMER OFFSET\tLAG\tLAST CONSUMED")
	var lag int64
	for _, r := range rows {
		last := "-"
		if r.p.LastTimestamp > 0 {
			last = time.UnixMilli(r.p.LastTimestamp).UTC().Format(timeLayout)
		}
		consumer := fmt.Sprint(r.p.ConsumerOffset)
		if r.p.ConsumerOffset < 0 {
			consumer = "none"
		}
		lag += r.p.Lag()
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%s\n", r.mq.Topic, r.mq.BrokerName, r.mq.QueueID,
			r.p.BrokerOffset, consumer, r.p.Lag(), last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "total lag %d", lag)
	if tps > 0 {
		fmt.Fprintf(g.stdout, ", consuming %.1f msg/s", tps)
	}
	fmt.Fprintln(g.stdout)
	for _, n := range notes {
		fmt.Fprintln(g.stdout, n)
	}
	return describeClients(ctx, g, s, brokers, group)
}

// computeProgress builds a topic's progress for a group on one broker from
// QUERY_CONSUMER_OFFSET and GET_MAX_OFFSET, for queues 0..n-1 (n from the
// broker's topic table when 0).
func computeProgress(ctx context.Context, s *admin.Session, b admin.Broker, group, topic string, n int) ([]progressRow, error) {
	if n == 0 {
		table, err := s.TopicConfigs(ctx, b.Addr)
		if err != nil {
			return nil, err
		}
		tc, ok := table[topic]
		if !ok {
			return nil, fmt.Errorf("broker %s has no topic %s", b.Addr, topic)
		}
		n = tc.ReadQueueNums
	}
	rows := make([]progressRow, 0, n)
	for q := 0; q < n; q++ {
		_, maxOff, err := s.QueueBounds(ctx, b.Addr, topic, q)
		if err != nil {
			return nil, err
		}
		off, found, err := s.ConsumerOffset(ctx, b.Addr, group, topic, q)
		if err != nil {
			return nil, err
		}
		if !found {
			off = -1
		}
		rows = append(rows, progressRow{admin.MessageQueue{Topic: topic, BrokerName: b.Name, QueueID: q},
			admin.QueueProgress{BrokerOffset: maxOff, ConsumerOffset: off}})
	}
	return rows, nil
}

// describeClients prints the group's connected consumers.
func describeClients(ctx context.Context, g *globals, s *admin.Session, brokers []admin.Broker, group string) error {
	seen := map[string]bool{}
	var clients []admin.Connection
	var how string
	for _, b := range brokers {
		c, err := s.Connections(ctx, b.Addr, group)
		var ns *admin.NotServedError
		switch {
		case errors.As(err, &ns):
			fmt.Fprintf(g.stdout, "clients: %v\n", ns)
			return nil
		case err != nil:
			return fmt.Errorf("clients of %s on %s: %w", group, b.Addr, err)
		}
		if c.MessageModel != "" {
			how = fmt.Sprintf(" (%s, %s, %s)", c.ConsumeType, c.MessageModel, c.ConsumeFromWhere)
		}
		for _, cl := range c.Clients {
			if !seen[cl.ClientID] {
				seen[cl.ClientID] = true
				clients = append(clients, cl)
			}
		}
	}
	fmt.Fprintf(g.stdout, "%d client(s) online%s\n", len(clients), how)
	for _, cl := range clients {
		fmt.Fprintf(g.stdout, "  %s  %s  %s v%d\n", cl.ClientID, cl.ClientAddr, cl.Language, cl.Version)
	}
	return nil
}

func newGroupResetCmd(g *globals) *cobra.Command {
	var topic, to string
	var queue int
	var offset int64
	c := &cobra.Command{
		Use:   "reset GROUP --topic TOPIC (--to TIME | --queue Q --offset N)",
		Short: "Move a group's offsets of a topic to a time or one queue to an offset (INVOKE_BROKER_TO_RESET_OFFSET)",
		Long: `Move a consumer group's offsets of a topic on every broker of the topic's route: each queue to the
first message stored at or after --to (RFC 3339, epoch milliseconds, a duration ago such as 90m,
or "end"), or, with --queue and --offset, that queue to that offset. wheelmq tells the group's
live consumers at once (RESET_CONSUMER_CLIENT_OFFSET); the official clients pause the queue for
about 10 s before they read from the new offset.`,
		Example: "  wheelctl group reset billing --topic orders --to 2h\n  wheelctl group reset billing --topic orders --queue 0 --offset 1200",
		Args:    exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ts := int64(-1)
			switch {
			case queue >= 0 && offset >= 0 && to == "":
			case to == "end":
			case to != "" && queue < 0 && offset < 0:
				var err error
				if ts, err = parseWhen("--to", to, time.Now(), -1); err != nil {
					return err
				}
			default:
				return usagef("give --to TIME, or --queue and --offset")
			}
			return resetGroup(cmd.Context(), g, args[0], topic, ts, queue, offset)
		},
	}
	f := c.Flags()
	f.StringVar(&topic, "topic", "", "the topic whose offsets move (required)")
	f.StringVar(&to, "to", "", "a time: RFC 3339, epoch ms, a duration ago (90m), or end")
	f.IntVar(&queue, "queue", -1, "one queue id (with --offset)")
	f.Int64Var(&offset, "offset", -1, "the offset for --queue")
	_ = c.MarkFlagRequired("topic")
	_ = c.RegisterFlagCompletionFunc("topic", completeTopics(g))
	return c
}

func resetGroup(ctx context.Context, g *globals, group, topic string, ts int64, queue int, offset int64) error {
	s := g.session()
	defer s.Close()
	f, err := newFinder(ctx, g, s, topic) // --broker, or the masters of the topic's route
	if err != nil {
		return err
	}
	tw := newTable(g)
	fmt.Fprintln(tw, "TOPIC\tBROKER\tQUEUE\tNEW OFFSET")
	for _, b := range f.brokers {
		offs, err := s.ResetOffsets(ctx, b.Addr, group, topic, ts, queue, offset)
		if err != nil {
			return fmt.Errorf("reset %s on %s: %w", group, b.Addr, err)
		}
		ids := make([]int, 0, len(offs))
		for q := range offs {
			ids = append(ids, int(q))
		}
		sort.Ints(ids)
		for _, q := range ids {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", topic, b.Name, q, offs[int32(q)])
		}
	}
	return tw.Flush()
}
