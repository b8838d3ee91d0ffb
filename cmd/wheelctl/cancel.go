package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/storage/message"
)

func newCancelCmd(g *globals) *cobra.Command {
	var id string
	c := &cobra.Command{
		Use:   "cancel --msg-id OFFSET_MSG_ID",
		Short: "Cancel a pending timer message",
		Long: `Cancel a pending timer message by the offset message id its send returned
(SendResult.OffsetMsgID; 'wheelctl send' prints it). The id holds the broker's address, so
--broker is only needed when that address is not reachable from here.`,
		Example: "  wheelctl cancel --msg-id 7F00000100002A9F0000000000001A2B",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
	c.Flags().StringVar(&id, "msg-id", "", "offset message id of the timer message (required)")
	_ = c.MarkFlagRequired("msg-id")
	return c
}
