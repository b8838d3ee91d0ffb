package main

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/actors/timer/schedule"
)

// sendOptions are the flags of send.
type sendOptions struct {
	topic, tag, keys, body, at, client string
	every                              time.Duration // --every: a recurring timer
	cron, tz                           string        // --cron, --tz: a recurring timer
	grpcEndpoint                       string        // --grpc-endpoint, for --client grpc
	size, count                        int
	delay                              time.Duration
}

func newSendCmd(g *globals) *cobra.Command {
	var o sendOptions
	c := &cobra.Command{
		Use:   "send --topic TOPIC [--body TEXT | --size N] [--delay 90s | --at TIME | --every 5s | --cron SPEC [--tz ZONE]]",
		Short: "Send messages, timer messages included",
		Long: `Send messages through the name server with wheelmq's native producer (--client native, the
default), the official RocketMQ Go client (--client official) or the RocketMQ 5 Go SDK over gRPC
(--client grpc --grpc-endpoint HOST:PORT); signed and over TLS as the global
--access-key, --secret-key and --tls flags say.

A timer message is delivered at its due time, never before: give --delay (from now) or --at
(an RFC 3339 time). Its offsetMsgId is what 'wheelctl cancel' takes.

A recurring timer fires again and again, each fire a new message: --every (an interval of at
least the broker's minimum, 1s) or --cron (5 fields from the minute, or 6 from the second) in
--tz (an IANA zone, default UTC). It is sent as the WHEEL_SCHEDULE property (docs/timer.md,
"Recurring timers"); 'wheelctl cancel --msg-id' with its offsetMsgId stops it.`,
		Example: `  wheelctl send --topic orders --body hello
  wheelctl send --topic orders --tag paid --keys order-17 --size 1024 --count 10
  wheelctl send --topic orders --delay 90s
  wheelctl send --topic orders --at 2026-12-01T09:00:00Z
  wheelctl send --topic orders --every 5s
  wheelctl send --topic reports --cron '0 9 * * MON-FRI' --tz Europe/Berlin`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSend(cmd, g, o) },
	}
	f := c.Flags()
	f.StringVar(&o.topic, "topic", "", "topic to send to (required)")
	f.StringVar(&o.tag, "tag", "", "message tag")
	f.StringVar(&o.keys, "keys", "", "message keys, separated by spaces or commas")
	f.StringVar(&o.body, "body", "hello from wheelctl", "message body")
	f.IntVar(&o.size, "size", 0, "send a body of this many random bytes instead of --body")
	f.IntVar(&o.count, "count", 1, "number of messages")
	f.DurationVar(&o.delay, "delay", 0, "deliver this long after sending (a timer message), e.g. 90s, 2h")
	f.StringVar(&o.at, "at", "", "deliver at this time (a timer message), RFC 3339, e.g. 2026-12-01T09:00:00Z")
	f.DurationVar(&o.every, "every", 0, "a recurring timer firing at this interval, e.g. 5s, 1h")
	f.StringVar(&o.cron, "cron", "", "a recurring timer firing on this cron schedule (5 or 6 fields), e.g. '0 9 * * *'")
	f.StringVar(&o.tz, "tz", "", "the IANA time zone of --cron, e.g. Europe/Berlin (default UTC)")
	f.StringVar(&o.client, "client", "native", "producer implementation: "+clientNames())
	f.StringVar(&o.grpcEndpoint, "grpc-endpoint", "", "the broker's gRPC endpoint host:port, for --client grpc (the RocketMQ 5 Go SDK)")
	_ = c.MarkFlagRequired("topic")
	_ = c.RegisterFlagCompletionFunc("topic", completeTopics(g))
	_ = c.RegisterFlagCompletionFunc("client", fixedCompletion("native", "official"))
	return c
}

// dueTime returns the delivery time the flags ask for (zero: none).
func (o sendOptions) dueTime(now time.Time) (time.Time, error) {
	switch {
	case o.delay != 0 && o.at != "":
		return time.Time{}, usagef("give --delay or --at, not both")
	case o.delay < 0:
		return time.Time{}, usagef("--delay %s: must be positive", o.delay)
	case o.delay > 0:
		return now.Add(o.delay), nil
	case o.at != "":
		t, err := time.Parse(time.RFC3339Nano, o.at)
		if err != nil {
			return time.Time{}, usagef("--at %q: want an RFC 3339 time such as 2026-12-01T09:00:00Z", o.at)
		}
		return t, nil
	}
	return time.Time{}, nil
}

// schedule returns the WHEEL_SCHEDULE the flags ask for ("" for none).
func (o sendOptions) schedule() (string, error) {
	timer := o.delay != 0 || o.at != ""
	switch {
	case o.every != 0 && o.cron != "":
		return "", usagef("give --every or --cron, not both")
	case (o.every != 0 || o.cron != "") && timer:
		return "", usagef("a recurring timer (--every, --cron) takes no --delay or --at")
	case o.tz != "" && o.cron == "":
		return "", usagef("--tz is the zone of --cron")
	case o.every < 0:
		return "", usagef("--every %s: must be positive", o.every)
	case o.every > 0:
		return "@every " + o.every.String(), nil
	case o.cron != "" && o.tz != "":
		return "CRON_TZ=" + o.tz + " " + o.cron, nil
	}
	return o.cron, nil
}

// splitKeys splits --keys on spaces and commas.
func splitKeys(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}

func runSend(cmd *cobra.Command, g *globals, o sendOptions) error {
	if o.count < 1 {
		return usagef("--count %d: must be at least 1", o.count)
	}
	if o.size < 0 || (o.size > 0 && cmd.Flags().Changed("body")) {
		return usagef("give --body or a positive --size, not both")
	}
	due, err := o.dueTime(time.Now())
	if err != nil {
		return err
	}
	sched, err := o.schedule()
	if err != nil {
		return err
	}
	var props map[string]string
	if sched != "" {
		props = map[string]string{schedule.Prop: sched}
	}
	body := []byte(o.body)
	if o.size > 0 {
		body = make([]byte, o.size)
		_, _ = rand.Read(body)
	}
	p, err := newProducer(o.client, producerOptions{Namesrv: g.namesrv, Group: "wheelctl_send", Retries: 2, SendTimeout: g.timeout,
		Security: &g.sec, GRPCEndpoint: o.grpcEndpoint, Topics: []string{o.topic}})
	if err != nil {
		return err
	}
	defer p.Close()
	out := g.stdout
	for i := 0; i < o.count; i++ {
		m := &outMessage{Topic: o.topic, Tag: o.tag, Keys: splitKeys(o.keys), Body: body, DeliverAt: due, Props: props}
		r, err := p.SendSync(cmd.Context(), m)
		if err != nil {
			err = fmt.Errorf("message %d of %d to %s: %w", i+1, o.count, o.topic, err)
			if h := connHint(err, !g.sec.overTLS()); h != "" {
				return withHint(err, h)
			}
			if strings.Contains(err.Error(), "route") || strings.Contains(err.Error(), "connect") {
				return withHint(err, "check that --namesrv "+g.namesrv+" is wheelmq's name server and the topic exists or can be auto-created")
			}
			return err
		}
		// The v5 SDK's receipt names no offsetMsgId and no queue: "-".
		queue := "-"
		if r.BrokerName != "" {
			queue = fmt.Sprintf("%s:%d", r.BrokerName, r.Queue)
		}
		fmt.Fprintf(out, "sent %d/%d  msgId %s  offsetMsgId %s  queue %s  offset %d\n",
			i+1, o.count, r.MsgID, cmpStr(r.OffsetMsgID, "-"), queue, r.QueueOffset)
		switch {
		case sched != "" && r.OffsetMsgID != "":
			fmt.Fprintf(out, "  recurring timer %q; stop it with: wheelctl cancel --msg-id %s\n", sched, r.OffsetMsgID)
		case sched != "":
			fmt.Fprintf(out, "  recurring timer %q\n", sched)
		case !due.IsZero() && r.OffsetMsgID != "":
			fmt.Fprintf(out, "  timer: due %s (in %s); cancel with: wheelctl cancel --msg-id %s\n",
				due.UTC().Format(timeLayout), time.Until(due).Round(time.Millisecond), r.OffsetMsgID)
		case !due.IsZero():
			// The v5 SDK answers no offsetMsgId: its send receipt's recall
			// handle is what cancels the timer (RecallMessage).
			fmt.Fprintf(out, "  timer: due %s (in %s)\n", due.UTC().Format(timeLayout), time.Until(due).Round(time.Millisecond))
		}
	}
	return nil
}

// timeLayout shows times to the millisecond.
const timeLayout = "2006-01-02 15:04:05.000 MST"
