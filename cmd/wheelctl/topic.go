package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// newTable starts an aligned table on w.
func newTable(g *globals) *tabwriter.Writer { return tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0) }

// targetBrokers returns the brokers an admin command addresses: --broker,
// or the masters the name server knows (of one cluster when cluster is set).
func targetBrokers(ctx context.Context, s *admin.Session, g *globals, cluster string) ([]admin.Broker, error) {
	if g.broker != "" && cluster == "" {
		return []admin.Broker{{Name: g.broker, Addr: g.broker}}, nil
	}
	all, err := s.Brokers(ctx, g.namesrv)
	if err != nil {
		return nil, fmt.Errorf("list brokers: %w", err)
	}
	var out []admin.Broker
	for _, b := range all {
		if b.ID == 0 && (cluster == "" || b.Cluster == cluster) {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		if cluster != "" {
			return nil, fmt.Errorf("the name server at %s knows no master broker in cluster %q", g.namesrv, cluster)
		}
		return nil, withHint(fmt.Errorf("the name server at %s knows no master broker", g.namesrv),
			"start a broker that registers with it, or give --broker")
	}
	return out, nil
}

func newTopicCmd(g *globals) *cobra.Command {
	return groupCmd("topic", "Create, list, describe and delete topics",
		newTopicCreateCmd(g), newTopicListCmd(g), newTopicDescribeCmd(g), newTopicDeleteCmd(g))
}

// parsePerm reads rw, r, w or RocketMQ's numeric permission bits.
func parsePerm(s string) (int, error) {
	switch s {
	case "rw", "wr":
		return admin.PermRead | admin.PermWrite, nil
	case "r":
		return admin.PermRead, nil
	case "w":
		return admin.PermWrite, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 15 {
		return 0, usagef("--perm %q: want rw, r, w or RocketMQ's bits (6 = rw)", s)
	}
	return n, nil
}

func newTopicCreateCmd(g *globals) *cobra.Command {
	var queues int
	var perm, cluster, msgType, attrs string
	var liteTTL time.Duration
	var order bool
	c := &cobra.Command{
		Use:   "create TOPIC [--queues N] [--perm rw] [--message-type FIFO] [--broker ADDR | --cluster NAME]",
		Short: "Create a topic (or update its queue counts and permission)",
		Long: `Create a topic with UPDATE_AND_CREATE_TOPIC on --broker, on every master broker of --cluster
(from the name server's GET_BROKER_CLUSTER_INFO), or on every master broker the name server knows.
One line per broker; a broker that fails does not stop the others, and the command then exits 1.
The brokers then register the topic's route with every name server, so producers and consumers
spread over all of them.

--message-type sets the topic's message.type attribute (RocketMQ 5: NORMAL, FIFO, DELAY,
TRANSACTION, PRIORITY, MIXED; mqadmin updateTopic -a +message.type=FIFO): brokers refuse messages of
another type, and gRPC routes accept only that type. --attributes passes a whole modification
list ("+message.type=FIFO,-reserve.time"). A FIFO topic is consumed in order per message group
by an orderly consumer group (consumeMessageOrderly: mqadmin updateSubGroup -o true). A PRIORITY
topic takes messages with a priority (RocketMQ 5.4; docs/priority.md): a message of priority p is
stored in queue min(p, queues-1) and POP consumers get the highest queue first, so give it as many
queues as priority levels. A LITE topic takes only messages with a lite topic (RocketMQ 5.5;
docs/lite.md), each lite topic an ordered queue of its own consumed by LitePushConsumers;
--lite-expiration sets how long a lite topic lives without a new message
(lite.topic.expiration, whole minutes).`,
		Example: "  wheelctl topic create orders --queues 8\n  wheelctl topic create payments --message-type FIFO\n  wheelctl topic create orders --cluster DefaultCluster --namesrv '10.0.0.1:9876;10.0.0.2:9876'\n  wheelctl topic create audit --perm r --broker 10.0.0.3:10911",
		Args:    exactArgs("TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := parsePerm(perm)
			if err != nil {
				return err
			}
			if queues < 1 || queues > 1024 {
				return usagef("--queues %d: want 1..1024", queues)
			}
			if err := meta.ValidateTopic(args[0]); err != nil {
				return usageErr(err)
			}
			if cluster != "" && cmd.Flag("broker").Changed {
				return usagef("give --broker or --cluster, not both")
			}
			s := g.session()
			defer s.Close()
			brokers, err := targetBrokers(cmd.Context(), s, g, cluster)
			if err != nil {
				return err
			}
			tc := admin.TopicConfig{TopicName: args[0], ReadQueueNums: queues, WriteQueueNums: queues, Perm: p, Order: order,
				AttributeMods: attrs}
			if msgType != "" {
				t := meta.MessageType(strings.ToUpper(msgType))
				if !slices.Contains(topicMessageTypes, t) {
					return usagef("--message-type %s: want one of %v", msgType, topicMessageTypes)
				}
				if attrs != "" {
					return usagef("give --message-type or --attributes, not both")
				}
				tc.AttributeMods = "+" + meta.AttrMessageType + "=" + string(t)
			}
			if liteTTL != 0 {
				if meta.MessageType(strings.ToUpper(msgType)) != meta.MessageTypeLite || liteTTL < time.Minute || liteTTL%time.Minute != 0 {
					return usagef("--lite-expiration %v: give it with --message-type LITE, in whole minutes", liteTTL)
				}
				tc.AttributeMods += ",+" + meta.AttrLiteExpiration + "=" + strconv.FormatInt(int64(liteTTL/time.Minute), 10)
			}
			if _, err := meta.ParseAttributes(tc.AttributeMods); err != nil {
				return usageErr(err)
			}
			return createOnBrokers(cmd.Context(), g, s, brokers, tc)
		},
	}
	c.Flags().IntVar(&queues, "queues", 8, "read and write queues")
	c.Flags().StringVar(&perm, "perm", "rw", "permission: rw, r or w")
	c.Flags().StringVar(&cluster, "cluster", "", "create on every master broker of this cluster")
	c.Flags().BoolVar(&order, "order", false, "mark the topic as ordered")
	c.Flags().StringVar(&msgType, "message-type", "", "the topic's message.type: NORMAL, FIFO, DELAY, TRANSACTION, PRIORITY, LITE or MIXED")
	c.Flags().DurationVar(&liteTTL, "lite-expiration", 0, "with --message-type LITE: a lite topic's life without a new message, whole minutes (lite.topic.expiration; 0: the broker's)")
	c.Flags().StringVar(&attrs, "attributes", "", "attribute modifications as mqadmin -a takes them (+key=value,-key)")
	_ = c.RegisterFlagCompletionFunc("perm", fixedCompletion("rw", "r", "w"))
	_ = c.RegisterFlagCompletionFunc("message-type", fixedCompletion("NORMAL", "FIFO", "DELAY", "TRANSACTION", "PRIORITY", "LITE", "MIXED"))
	return c
}

// topicMessageTypes are the values of topic create --message-type.
var topicMessageTypes = []meta.MessageType{meta.MessageTypeNormal, meta.MessageTypeFIFO, meta.MessageTypeDelay,
	meta.MessageTypeTransaction, meta.MessageTypePriority, meta.MessageTypeLite, meta.MessageTypeMixed}

// createOnBrokers creates tc on every broker, one line each, going on
// after a failure; it fails when any broker did.
func createOnBrokers(ctx context.Context, g *globals, s *admin.Session, brokers []admin.Broker, tc admin.TopicConfig) error {
	var failed []string
	for _, b := range brokers {
		if err := s.CreateTopic(ctx, b.Addr, tc); err != nil {
			fmt.Fprintf(g.stdout, "FAILED to create topic %s on %s (%s): %v\n", tc.TopicName, b.Name, b.Addr, err)
			failed = append(failed, b.Name+" ("+b.Addr+")")
			continue
		}
		attrs := ""
		if tc.AttributeMods != "" {
			attrs = ", attributes " + tc.AttributeMods
		}
		fmt.Fprintf(g.stdout, "created topic %s on %s (%s): %d queues, perm %s%s\n",
			tc.TopicName, b.Name, b.Addr, tc.WriteQueueNums, admin.PermString(tc.Perm), attrs)
	}
	if len(failed) > 0 {
		return fmt.Errorf("create %s failed on %d of %d brokers: %s", tc.TopicName, len(failed), len(brokers),
			strings.Join(failed, ", "))
	}
	if len(brokers) > 1 {
		fmt.Fprintf(g.stdout, "topic %s created on %d brokers\n", tc.TopicName, len(brokers))
	}
	return nil
}

func newTopicListCmd(g *globals) *cobra.Command {
	var system bool
	var cluster string
	c := &cobra.Command{
		Use:   "list [--system]",
		Short: "List the topics of the brokers",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := g.session()
			defer s.Close()
			brokers, err := targetBrokers(cmd.Context(), s, g, cluster)
			if err != nil {
				return err
			}
			type row struct {
				b  admin.Broker
				tc admin.TopicConfig
			}
			var rows []row
			for _, b := range brokers {
				table, err := s.TopicConfigs(cmd.Context(), b.Addr)
				if err != nil {
					return fmt.Errorf("topics of %s: %w", b.Addr, err)
				}
				for name, tc := range table {
					if !system && (meta.IsSystemTopic(name) || strings.HasPrefix(name, "%RETRY%") ||
						strings.HasPrefix(name, "%DLQ%") || name == b.Name || name == b.Cluster) {
						continue
					}
					tc.TopicName = name
					rows = append(rows, row{b, tc})
				}
			}
			sort.Slice(rows, func(i, j int) bool {
				if rows[i].tc.TopicName != rows[j].tc.TopicName {
					return rows[i].tc.TopicName < rows[j].tc.TopicName
				}
				return rows[i].b.Name < rows[j].b.Name
			})
			tw := newTable(g)
			fmt.Fprintln(tw, "TOPIC\tBROKER\tREAD\tWRITE\tPERM\tORDER")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%t\n", r.tc.TopicName, r.b.Name, r.tc.ReadQueueNums,
					r.tc.WriteQueueNums, admin.PermString(r.tc.Perm), r.tc.Order)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(rows) == 0 {
				fmt.Fprintln(g.stdout, "(no topics; --system shows the broker's own)")
			}
			return nil
		},
	}
	c.Flags().BoolVar(&system, "system", false, "include system, retry and DLQ topics")
	c.Flags().StringVar(&cluster, "cluster", "", "only the brokers of this cluster")
	return c
}

func newTopicDescribeCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:               "describe TOPIC",
		Short:             "Show a topic's route and per-queue offsets",
		Args:              exactArgs("TOPIC"),
		ValidArgsFunction: completeTopicArg(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, topic := cmd.Context(), args[0]
			s := g.session()
			defer s.Close()
			route, err := s.Route(ctx, g.namesrv, topic)
			if err != nil {
				if errors.Is(err, admin.ErrNoTopic) {
					return withHint(err, "'wheelctl topic list' shows the topics; 'wheelctl topic create' makes one")
				}
				return err
			}
			fmt.Fprintf(g.stdout, "topic %s\n", topic)
			for _, qd := range route.Queues {
				fmt.Fprintf(g.stdout, "  %s: %d read / %d write queues, perm %s\n", qd.BrokerName,
					qd.ReadQueueNums, qd.WriteQueueNums, admin.PermString(qd.Perm))
			}
			tw := newTable(g)
			fmt.Fprintln(tw, "BROKER\tADDR\tQUEUE\tMIN OFFSET\tMAX OFFSET\tMESSAGES\tLAST WRITE")
			var notes []string
			var total int64
			for _, qd := range route.Queues {
				addr := route.Master(qd.BrokerName)
				if addr == "" {
					fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t(no master)\n", qd.BrokerName)
					continue
				}
				queues, note, err := queueOffsets(ctx, s, addr, topic, max(qd.ReadQueueNums, qd.WriteQueueNums))
				if err != nil {
					return fmt.Errorf("offsets of %s on %s: %w", topic, addr, err)
				}
				if note != "" {
					notes = append(notes, note)
				}
				for q, off := range queues {
					last := "-"
					if off.LastUpdateTimestamp > 0 {
						last = time.UnixMilli(off.LastUpdateTimestamp).UTC().Format(timeLayout)
					}
					total += off.MaxOffset - off.MinOffset
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", qd.BrokerName, addr, q, off.MinOffset,
						off.MaxOffset, off.MaxOffset-off.MinOffset, last)
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%d messages held\n", total)
			for _, n := range notes {
				fmt.Fprintln(g.stdout, n)
			}
			return nil
		},
	}
	return c
}

// queueOffsets reads queues 0..n-1 of a topic on one broker:
// GET_TOPIC_STATS_INFO, or GET_MIN/MAX_OFFSET per queue where the broker
// does not serve it (note says so).
func queueOffsets(ctx context.Context, s *admin.Session, addr, topic string, n int) ([]admin.TopicOffset, string, error) {
	out := make([]admin.TopicOffset, n)
	stats, err := s.TopicStats(ctx, addr, topic)
	var ns *admin.NotServedError
	switch {
	case err == nil:
		for mq, off := range stats {
			if mq.QueueID >= 0 && mq.QueueID < n {
				out[mq.QueueID] = off
			}
		}
		return out, "", nil
	case !errors.As(err, &ns):
		return nil, "", err
	}
	for q := range out {
		minOff, maxOff, err := s.QueueBounds(ctx, addr, topic, q)
		if err != nil {
			return nil, "", err
		}
		out[q] = admin.TopicOffset{MinOffset: minOff, MaxOffset: maxOff}
	}
	return out, fmt.Sprintf("offsets from GET_MIN_OFFSET/GET_MAX_OFFSET: %v, so no last write time", ns), nil
}

func newTopicDeleteCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:               "delete TOPIC",
		Short:             "Delete a topic from its brokers and the name server",
		Long:              "Delete a topic (DELETE_TOPIC_IN_BROKER on each broker holding it, then DELETE_TOPIC_IN_NAMESRV).\nIts messages stay in the CommitLog until retention removes them; its consumer offsets are dropped.",
		Args:              exactArgs("TOPIC"),
		ValidArgsFunction: completeTopicArg(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, topic := cmd.Context(), args[0]
			s := g.session()
			defer s.Close()
			var addrs []string
			if g.broker != "" {
				addrs = []string{g.broker}
			} else {
				route, err := s.Route(ctx, g.namesrv, topic)
				if err != nil {
					if errors.Is(err, admin.ErrNoTopic) {
						return withHint(err, "nothing to delete; give --broker to delete a topic the name server does not route")
					}
					return err
				}
				for _, qd := range route.Queues {
					if a := route.Master(qd.BrokerName); a != "" {
						addrs = append(addrs, a)
					}
				}
			}
			for _, a := range addrs {
				if err := s.DeleteTopic(ctx, a, topic); err != nil {
					return fmt.Errorf("delete %s on %s: %w", topic, a, err)
				}
				fmt.Fprintf(g.stdout, "deleted topic %s on %s\n", topic, a)
			}
			var errs []error
			for _, ns := range admin.NameServers(g.namesrv) { // each holds its own routes
				if err := s.DeleteTopicInNamesrv(ctx, ns, topic); err != nil {
					errs = append(errs, fmt.Errorf("delete the route of %s on %s: %w", topic, ns, err))
					continue
				}
				fmt.Fprintf(g.stdout, "deleted the route of %s on name server %s\n", topic, ns)
			}
			return errors.Join(errs...)
		},
	}
	return c
}
