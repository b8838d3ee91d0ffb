package main

// wheelctl timers: a topic's pending timer messages, recurring schedules
// included, through wheelmq's LIST_TIMER_MESSAGES (3502) on each master
// of the topic (or --broker).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// pendingTimer is one row of `wheelctl timers --json`: the broker's entry
// and the broker that holds it.
type pendingTimer struct {
	Broker string `json:"broker"`
	remoting.TimerListEntry
}

func newTimersCmd(g *globals) *cobra.Command {
	var topic string
	var limit int
	var schedulesOnly, asJSON bool
	c := &cobra.Command{
		Use:   "timers --topic T [--schedules] [--limit N] [--json]",
		Short: "List a topic's pending timer messages and recurring schedules",
		Long: `List a topic's pending timer messages in due order, recurring schedules included (wheelmq's
LIST_TIMER_MESSAGES, 3502, on each master of the topic's route, or on --broker). One line per
timer: its due time (a schedule's pending fire), its offset message id, the message id the
producer got and, for a recurring schedule, its text and the number of its pending fire.

To cancel a row, give its offset message id to cancel (a schedule is then stopped for good):

  wheelctl cancel --msg-id <OFFSET MSG ID>

Each broker is asked for pages of at most 500 timers until it gave --limit rows or has none left;
the first --limit of all, by due time, are printed.
Under ACL the account needs SUB on the topic.`,
		Example: "  wheelctl timers --topic orders\n  wheelctl timers --topic orders --schedules --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" {
				return usagef("give --topic")
			}
			if limit < 1 {
				return usagef("--limit %d: want 1 or more", limit)
			}
			s := g.session()
			defer s.Close()
			addrs, err := timerBrokers(cmd.Context(), g, s, topic)
			if err != nil {
				return err
			}
			var rows []pendingTimer
			for _, a := range addrs { // each broker's first --limit, then the first --limit of all by due time
				got, err := listTimers(cmd.Context(), s, a, topic, limit, schedulesOnly)
				if err != nil {
					return fmt.Errorf("list the timers of %s on %s: %w", topic, a, err)
				}
				rows = append(rows, got...)
			}
			sort.SliceStable(rows, func(i, j int) bool { return rows[i].DueMs < rows[j].DueMs })
			rows = rows[:min(len(rows), limit)]
			if asJSON {
				return printTimersJSON(g.stdout, rows)
			}
			return printTimers(g.stdout, rows, topic)
		},
	}
	c.Flags().StringVar(&topic, "topic", "", "the timers' topic")
	c.Flags().BoolVar(&schedulesOnly, "schedules", false, "only recurring schedules (--every, --cron)")
	c.Flags().IntVar(&limit, "limit", 100, "the most rows printed")
	c.Flags().BoolVar(&asJSON, "json", false, "print the rows as a JSON array (LIST_TIMER_MESSAGES' entries with broker)")
	_ = c.RegisterFlagCompletionFunc("topic", completeTopics(g))
	return c
}

// timerBrokers is --broker, else the masters of topic's route.
func timerBrokers(ctx context.Context, g *globals, s *admin.Session, topic string) ([]string, error) {
	if g.broker != "" {
		return []string{g.broker}, nil
	}
	route, err := s.Route(ctx, g.namesrv, topic)
	if err != nil {
		if errors.Is(err, admin.ErrNoTopic) {
			return nil, withHint(err, "no broker holds it; give --broker to ask one directly")
		}
		return nil, err
	}
	var addrs []string
	for _, qd := range route.Queues {
		if a := route.Master(qd.BrokerName); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs, nil
}

// listTimers pages through addr's pending timers of topic until it holds
// want rows (only schedules with schedulesOnly) or none are left.
func listTimers(ctx context.Context, s *admin.Session, addr, topic string, want int, schedulesOnly bool) ([]pendingTimer, error) {
	var rows []pendingTimer
	after := ""
	for {
		page, err := s.ListTimers(ctx, addr, topic, after, min(want-len(rows), broker.TimerListMax))
		if err != nil {
			return nil, err
		}
		for _, t := range page.Timers {
			if schedulesOnly && t.Schedule == "" {
				continue
			}
			rows = append(rows, pendingTimer{Broker: addr, TimerListEntry: t})
			if len(rows) == want {
				return rows, nil
			}
		}
		if !page.More || page.Next == "" {
			return rows, nil
		}
		after = page.Next
	}
}

// printTimers writes one line per row and a count.
func printTimers(w io.Writer, rows []pendingTimer, topic string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DUE\tOFFSET MSG ID\tMSG ID\tSCHEDULE\tFIRE")
	for _, r := range rows {
		sched, fire := "-", "-"
		if r.Schedule != "" {
			sched, fire = r.Schedule, fmt.Sprintf("#%d", r.Seq)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", time.UnixMilli(r.DueMs).UTC().Format(timeLayout),
			r.OffsetMsgID, r.MsgID, sched, fire)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write the timers: %w", err)
	}
	_, err := fmt.Fprintf(w, "%d pending timers of %s (cancel one: wheelctl cancel --msg-id <OFFSET MSG ID>)\n", len(rows), topic)
	return err
}

// printTimersJSON writes rows as a JSON array.
func printTimersJSON(w io.Writer, rows []pendingTimer) error {
	if rows == nil {
		rows = []pendingTimer{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rows); err != nil {
		return fmt.Errorf("write the timers: %w", err)
	}
	return nil
}
