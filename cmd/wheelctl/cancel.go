package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

func newCancelCmd(g *globals) *cobra.Command {
	var id, handle string
	c := &cobra.Command{
		Use:   "cancel (--msg-id OFFSET_MSG_ID | --recall-handle HANDLE)",
		Short: "Cancel a pending timer message",
		Long: `Cancel a pending timer message, by one of:

  --msg-id         the offset message id its send returned (SendResult.OffsetMsgID; 'wheelctl
                   send' prints it). The id holds the broker's address, so --broker is only
                   needed when that address is not reachable from here.
  --recall-handle  the recall handle its send returned (RocketMQ 5.3's SendResult.recallHandle,
                   the v5 SDKs' SendReceipt.RecallHandle). The handle names the topic and the
                   broker; the broker's master address is looked up on --namesrv unless
                   --broker is given. Sent as RECALL_MESSAGE (370), as Producer.recallMessage
                   does: recalling a message already cancelled or never sent succeeds and
                   changes nothing; a message already due is refused.`,
		Example: "  wheelctl cancel --msg-id 7F00000100002A9F0000000000001A2B\n" +
			"  wheelctl cancel --recall-handle djEgb3JkZXJzIGJyb2tlci1hIDE3NjQ2ODk2MDAwMDAgMDFBQkM=",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case (id == "") == (handle == ""):
				return usagef("give one of --msg-id and --recall-handle")
			case handle != "":
				return recallByHandle(cmd.Context(), g, handle)
			}
			host, _, err := message.ParseOffsetMsgID(id)
			if err != nil {
				return usagef("--msg-id %q is not an offset message id (32 hex digits, as send prints after offsetMsgId): %v", id, err)
			}
			broker := g.broker
			if broker == "" {
				broker = host.String()
			}
			s := g.session()
			defer s.Close()
			if err := s.CancelTimer(cmd.Context(), broker, id); err != nil {
				return fmt.Errorf("cancel %s: %w", id, err)
			}
			fmt.Fprintf(g.stdout, "cancelled %s on %s\n", id, broker)
			return nil
		},
	}
	c.Flags().StringVar(&id, "msg-id", "", "offset message id of the timer message")
	c.Flags().StringVar(&handle, "recall-handle", "", "recall handle of the timer message (RECALL_MESSAGE)")
	return c
}

// recallByHandle sends RECALL_MESSAGE for handle to the master of the
// broker it names (or --broker) and prints the result.
func recallByHandle(ctx context.Context, g *globals, handle string) error {
	h, err := remoting.ParseRecallHandle(handle)
	if err != nil {
		return usagef("--recall-handle: %v", err)
	}
	s := g.session()
	defer s.Close()
	broker := g.broker
	if broker == "" {
		route, err := s.Route(ctx, g.namesrv, h.Topic)
		if err != nil {
			return fmt.Errorf("recall: find broker %s of topic %s: %w", h.BrokerName, h.Topic, err)
		}
		if broker = route.Master(h.BrokerName); broker == "" {
			return fmt.Errorf("recall: topic %s has no master of broker %s on %s (give --broker)", h.Topic, h.BrokerName, g.namesrv)
		}
	}
	msgID, err := s.Recall(ctx, broker, h.Topic, handle)
	if err != nil {
		return fmt.Errorf("recall %s of topic %s: %w", h.Uniq, h.Topic, err)
	}
	if msgID == "" {
		msgID = h.Uniq
	}
	due := time.UnixMilli(h.DueMs).UTC().Format(timeLayout)
	fmt.Fprintf(g.stdout, "recalled %s (topic %s, due %s) on %s (%s)\n", msgID, h.Topic, due, h.BrokerName, broker)
	return nil
}
