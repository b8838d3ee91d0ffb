package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// runCancel cancels a pending timer message by the offset message id its
// send returned (SendResult.OffsetMsgID).
func runCancel(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	broker := fs.String("broker", "127.0.0.1:10911", "broker address")
	id := fs.String("msg-id", "", "offset message id of the timer message (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *id == "" {
		return fmt.Errorf("--msg-id is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, *broker, remoting.ClientOptions{})
	if err != nil {
		return fmt.Errorf("connect %s: %w", *broker, err)
	}
	defer c.Close()
	resp, err := c.Invoke(ctx, remoting.NewRequest(remoting.CancelTimerMessage, map[string]string{"msgId": *id}, nil))
	if err != nil {
		return fmt.Errorf("cancel request: %w", err)
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("broker refused (code %d): %s", resp.Code, resp.Remark)
	}
	fmt.Fprintf(stdout, "cancelled %s\n", *id)
	return nil
}
