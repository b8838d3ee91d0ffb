package main

// The "was it delivered?" half of message show: which consumer groups read
// the message's topic and whether each has consumed past it, as RocketMQ's
// messageTrackDetail works it out (QUERY_TOPIC_CONSUME_BY_WHO, then each
// group's committed offset of the message's queue).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
)

// trackLine renders the groups of m's topic and whether each consumed m
// (a message in its queue: plain, or a delivered timer's written-back
// copy); "" when m is not in a queue yet or the broker cannot tell.
func trackLine(ctx context.Context, f *finder, m located) string {
	topic, queue, offset := m.topic(), int(m.rec.QueueID), m.rec.QueueOffset
	groups, err := f.s.ConsumedBy(ctx, m.broker, topic)
	var ns *admin.NotServedError
	switch {
	case errors.As(err, &ns):
		return ""
	case err != nil:
		return fmt.Sprintf("    consumers: unknown (%v)\n", err)
	case len(groups) == 0:
		return "    consumers: no group reads this topic\n"
	}
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		off, found, err := f.s.ConsumerOffset(ctx, m.broker, g, topic, queue)
		switch {
		case err != nil:
			parts = append(parts, g+" unknown")
		case found && off > offset:
			parts = append(parts, g+" consumed")
		default:
			parts = append(parts, g+" not yet")
		}
	}
	return "    consumers: " + strings.Join(parts, ", ") + "\n"
}
