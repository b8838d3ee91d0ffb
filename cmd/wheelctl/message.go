package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/storage/message"
)

func newMessageCmd(g *globals) *cobra.Command {
	return groupCmd("message", "Look messages up by id or key: properties, times, queue, offset, timer state",
		newMessageShowCmd(g), newMessageQueryCmd(g))
}

func newMessageShowCmd(g *globals) *cobra.Command {
	var id, topic string
	c := &cobra.Command{
		Use:   "show --msg-id ID [--topic T]",
		Short: "Show one message by its offset message id, or by its message id (UNIQ_KEY) with --topic",
		Long: `Show a message: its topic, queue and offset, ids, keys, tags, born and store times, every
property and a body preview; for a timer message its due time and state (pending, delivered,
cancelled, or unknown when the index cannot tell); and which consumer groups read the topic and
whether each has consumed the message (QUERY_TOPIC_CONSUME_BY_WHO and each group's offset).

--msg-id takes the offsetMsgId a send prints (it names the broker and the CommitLog offset:
VIEW_MESSAGE_BY_ID), or with --topic the msgId (the UNIQ_KEY: QUERY_MESSAGE on the topic's brokers).`,
		Example: `  wheelctl message show --msg-id 7F00000100002A9F0000000000001A2B
  wheelctl message show --msg-id 7F000001B5F818B4AAC2164A2F3E0000 --topic orders`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMessageShow(cmd.Context(), g, id, topic)
		},
	}
	c.Flags().StringVar(&id, "msg-id", "", "offset message id, or message id (UNIQ_KEY) with --topic (required)")
	c.Flags().StringVar(&topic, "topic", "", "topic the message was sent to (needed for a UNIQ_KEY)")
	_ = c.MarkFlagRequired("msg-id")
	return c
}

func newMessageQueryCmd(g *globals) *cobra.Command {
	var topic, key, begin, end string
	var maxNum int
	c := &cobra.Command{
		Use:   "query --topic T --key K [--begin TIME] [--end TIME] [--max N]",
		Short: "Find the messages of a topic that carry a key (KEYS)",
		Long: `Find the messages of a topic carrying a key among their KEYS (QUERY_MESSAGE on each broker of the
topic), timer messages still waiting included (they are stored, and indexed, under
rmq_sys_wheel_timer until due). Each is printed as 'message show' does.

--begin and --end bound the store time: an RFC 3339 time, milliseconds since the epoch, or a
duration before now (90m). The broker returns at most 64 messages per topic (--max).`,
		Example: `  wheelctl message query --topic orders --key order-7
  wheelctl message query --topic orders --key order-7 --begin 2h --max 10`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			b, err := parseWhen("--begin", begin, now, 0)
			if err != nil {
				return err
			}
			e, err := parseWhen("--end", end, now, math.MaxInt64)
			if err != nil {
				return err
			}
			if maxNum < 1 || maxNum > 64 {
				return usagef("--max %d: want 1..64", maxNum)
			}
			return runMessageQuery(cmd.Context(), g, admin.MessageQuery{Topic: topic, Key: key, Max: maxNum, Begin: b, End: e})
		},
	}
	f := c.Flags()
	f.StringVar(&topic, "topic", "", "topic (required)")
	f.StringVar(&key, "key", "", "key, one of the message's KEYS (required)")
	f.StringVar(&begin, "begin", "", "earliest store time (RFC 3339, epoch ms, or a duration ago; default: the beginning)")
	f.StringVar(&end, "end", "", "latest store time (same forms; default: no limit)")
	f.IntVar(&maxNum, "max", 32, "most messages per topic and broker (1..64)")
	_ = c.MarkFlagRequired("topic")
	_ = c.MarkFlagRequired("key")
	return c
}

// parseWhen reads a time flag as epoch milliseconds.
func parseWhen(flag, v string, now time.Time, def int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UnixMilli(), nil
	}
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d).UnixMilli(), nil
	}
	return 0, usagef("%s %q: want an RFC 3339 time, epoch milliseconds or a duration ago (90m)", flag, v)
}

// finder looks messages up on a set of brokers.
type finder struct {
	s       *admin.Session
	brokers []admin.Broker
	names   map[string]string // address -> broker name
}

// newFinder addresses --broker, or the masters of topic's route.
func newFinder(ctx context.Context, g *globals, s *admin.Session, topic string) (*finder, error) {
	f := &finder{s: s, names: map[string]string{}}
	if g.broker != "" {
		f.brokers = []admin.Broker{{Name: g.broker, Addr: g.broker}}
		return f, nil
	}
	r, err := s.Route(ctx, g.namesrv, topic)
	if err != nil {
		if errors.Is(err, admin.ErrNoTopic) {
			return nil, withHint(err, "check the topic name ('wheelctl topic list'), or give --broker")
		}
		return nil, err
	}
	for _, b := range r.Brokers {
		if b.ID == 0 {
			f.brokers = append(f.brokers, b)
			f.names[b.Addr] = b.Name
		}
	}
	if len(f.brokers) == 0 {
		return nil, fmt.Errorf("topic %s has no master broker in its route", topic)
	}
	return f, nil
}

// query asks every broker; a broker that fails is reported unless another
// answered.
func (f *finder) query(ctx context.Context, q admin.MessageQuery) ([]located, error) {
	var out []located
	var errs []error
	for _, b := range f.brokers {
		a, err := f.s.QueryMessages(ctx, b.Addr, q)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range a.Records {
			out = append(out, newLocated(r, b.Addr, f.names[b.Addr]))
		}
	}
	if len(errs) == len(f.brokers) {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// related finds what the index holds under m's UNIQ_KEY on m's broker: the
// written-back copy under the real topic and cancels under the timer topic.
func (f *finder) related(ctx context.Context, m located) ([]located, error) {
	uniq := m.uniq()
	if uniq == "" {
		return nil, nil
	}
	var out []located
	for _, topic := range []string{m.topic(), timer.Topic} {
		a, err := f.s.QueryMessages(ctx, m.broker, admin.MessageQuery{Topic: topic, Key: uniq, Unique: true})
		if err != nil {
			return out, err
		}
		for _, r := range a.Records {
			out = append(out, newLocated(r, m.broker, m.name))
		}
	}
	return out, nil
}

func runMessageShow(ctx context.Context, g *globals, id, topic string) error {
	s := g.session()
	defer s.Close()
	var found []located
	var viewErr error
	if host, off, err := message.ParseOffsetMsgID(id); err == nil {
		broker := g.broker
		if broker == "" {
			broker = host.String()
		}
		rec, err := s.ViewMessage(ctx, broker, off)
		if err == nil {
			found = append(found, newLocated(rec, broker, ""))
		} else {
			viewErr = fmt.Errorf("offset message id %s: %w", id, err)
		}
	}
	if len(found) == 0 && topic == "" {
		if viewErr != nil {
			return withHint(viewErr, "if it is a msgId (UNIQ_KEY), add --topic")
		}
		return usagef("--msg-id %q is not an offset message id (32 or 56 hex digits): for a msgId (UNIQ_KEY) give --topic", id)
	}
	var f *finder
	if len(found) > 0 {
		// Found by offset: the state lookups go to the same broker; its
		// name comes from the route when the name server answers.
		f = &finder{s: s, brokers: []admin.Broker{{Addr: found[0].broker}}, names: map[string]string{}}
		if rf, err := newFinder(ctx, g, s, found[0].topic()); err == nil {
			f.names = rf.names
			found[0].name = cmpStr(rf.names[found[0].broker], found[0].broker)
		}
	} else {
		var err error
		if f, err = newFinder(ctx, g, s, topic); err != nil {
			return err
		}
		for _, t := range []string{topic, timer.Topic} {
			recs, err := f.query(ctx, admin.MessageQuery{Topic: t, Key: id, Unique: true})
			if err != nil {
				return fmt.Errorf("look %s up in %s: %w", id, t, err)
			}
			for _, r := range recs {
				if r.topic() == topic && r.kind() != kindCancel {
					found = append(found, r)
				}
			}
		}
		if len(found) == 0 {
			err := fmt.Errorf("no message with msgId %s in topic %s", id, topic)
			if viewErr != nil {
				err = fmt.Errorf("%w (and %w)", err, viewErr)
			}
			return withHint(err, "the index may not have caught up yet, or the id or topic is wrong")
		}
	}
	return printMessages(ctx, g.stdout, f, found, time.Now())
}

func runMessageQuery(ctx context.Context, g *globals, q admin.MessageQuery) error {
	s := g.session()
	defer s.Close()
	f, err := newFinder(ctx, g, s, q.Topic)
	if err != nil {
		return err
	}
	found, err := f.query(ctx, q)
	if err != nil {
		return fmt.Errorf("query %s by key %s: %w", q.Topic, q.Key, err)
	}
	waiting := q
	waiting.Topic = timer.Topic
	timers, err := f.query(ctx, waiting)
	if err != nil {
		return fmt.Errorf("query waiting timer messages by key %s: %w", q.Key, err)
	}
	for _, r := range timers {
		if r.topic() == q.Topic && r.kind() == kindTimer {
			found = append(found, r)
		}
	}
	if len(found) == 0 {
		return withHint(fmt.Errorf("no message of %s carries the key %s", q.Topic, q.Key),
			"keys are the message's KEYS (sent with --keys); for a msgId use 'wheelctl message show --msg-id ID --topic T'")
	}
	return printMessages(ctx, g.stdout, f, found, time.Now())
}

// printMessages prints each message once: a timer message found both
// waiting and written back is shown once, from its timer copy, with its
// state. Messages are ordered by born time.
func printMessages(ctx context.Context, w io.Writer, f *finder, found []located, now time.Time) error {
	sort.SliceStable(found, func(i, j int) bool {
		a, b := found[i], found[j]
		if a.rec.BornTimestamp != b.rec.BornTimestamp {
			return a.rec.BornTimestamp < b.rec.BornTimestamp
		}
		return a.kind() == kindTimer && b.kind() != kindTimer // the timer copy first
	})
	shown := map[string]bool{} // broker + offset
	n := 0
	for _, m := range found {
		if shown[m.broker+"@"+strconv.FormatInt(m.rec.PhysicalOffset, 10)] {
			continue
		}
		shown[m.broker+"@"+strconv.FormatInt(m.rec.PhysicalOffset, 10)] = true
		var st *timerState
		if k := m.kind(); k == kindTimer || k == kindWrittenBack {
			rel, err := f.related(ctx, m)
			if err != nil {
				return fmt.Errorf("state of timer message %s: %w", m.uniq(), err)
			}
			s := assess(m, rel, now)
			st = &s
			if s.Delivered != nil {
				shown[s.Delivered.broker+"@"+strconv.FormatInt(s.Delivered.rec.PhysicalOffset, 10)] = true
			}
		}
		n++
		fmt.Fprint(w, formatRecord(n, m, st))
		switch {
		case m.kind() != kindTimer:
			fmt.Fprint(w, trackLine(ctx, f, m))
		case st != nil && st.Delivered != nil:
			fmt.Fprint(w, trackLine(ctx, f, *st.Delivered))
		}
	}
	return nil
}

// formatRecord renders a looked-up message for a person.
func formatRecord(n int, m located, st *timerState) string {
	var b strings.Builder
	r := &m.rec
	queue, offset := int64(r.QueueID), r.QueueOffset
	if m.kind() == kindTimer {
		queue, _ = strconv.ParseInt(m.props[message.PropRealQueueID], 10, 32)
		offset = -1 // it has no offset in its real queue until written back
		if st != nil && st.Delivered != nil {
			queue, offset = int64(st.Delivered.rec.QueueID), st.Delivered.rec.QueueOffset
		}
	}
	where := fmt.Sprintf("queue %s:%d  offset %d", m.name, queue, offset)
	if offset < 0 {
		where = fmt.Sprintf("queue %s:%d  (not in the queue yet)", m.name, queue)
	}
	fmt.Fprintf(&b, "#%d  %s  %s\n", n, m.topic(), where)
	fmt.Fprintf(&b, "    msgId %s  offsetMsgId %s\n", cmpStr(m.uniq(), "-"), m.offsetMsgID())
	var attrs []string
	if k := m.props[message.PropKeys]; k != "" {
		attrs = append(attrs, "keys "+k)
	}
	if t := m.props[message.PropTags]; t != "" {
		attrs = append(attrs, "tags "+t)
	}
	born, stored := time.UnixMilli(r.BornTimestamp), time.UnixMilli(r.StoreTimestamp)
	attrs = append(attrs, "born "+born.UTC().Format(timeLayout)+" from "+r.BornHost.String(),
		"stored "+stored.UTC().Format(timeLayout)+" on "+r.StoreHost.String())
	if r.ReconsumeTimes > 0 {
		attrs = append(attrs, fmt.Sprintf("redelivery %d", r.ReconsumeTimes))
	}
	fmt.Fprintf(&b, "    %s\n", strings.Join(attrs, "  "))
	if st != nil {
		due := "-"
		if !st.Due.IsZero() {
			due = st.Due.UTC().Format(timeLayout)
		}
		fmt.Fprintf(&b, "    timer  due %s  state %s: %s\n", due, st.State, st.Detail)
		if m.kind() == kindTimer {
			fmt.Fprintf(&b, "           waiting copy in %s queue %d offset %d\n", r.Topic, r.QueueID, r.QueueOffset)
		}
	}
	keys := make([]string, 0, len(m.props))
	for k := range m.props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	props := make([]string, 0, len(keys))
	for _, k := range keys {
		props = append(props, k+"="+m.props[k])
	}
	fmt.Fprintf(&b, "    properties  %s\n", strings.Join(props, "  "))
	body := bodyPreview(r.Body, 64)
	if r.SysFlag&message.SysFlagCompressed != 0 {
		body = fmt.Sprintf("%d B compressed", len(r.Body))
	}
	fmt.Fprintf(&b, "    body   %s\n", body)
	return b.String()
}

// cmpStr is s, or def when s is empty.
func cmpStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
