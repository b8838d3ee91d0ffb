package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func runSend(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ns := fs.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := fs.String("topic", "", "topic (required)")
	body := fs.String("body", "hello from wheelctl", "message body")
	tag := fs.String("tag", "", "message tag")
	keys := fs.String("keys", "", "space-separated message keys")
	count := fs.Int("n", 1, "number of messages")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *topic == "" {
		return fmt.Errorf("--topic is required")
	}
	rlog.SetLogLevel("error")
	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{*ns})),
		producer.WithGroupName("wheelctl"),
	)
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer p.Shutdown()
	for i := 0; i < *count; i++ {
		m := primitive.NewMessage(*topic, []byte(*body))
		if *tag != "" {
			m.WithTag(*tag)
		}
		if *keys != "" {
			m.WithKeys(strings.Fields(*keys))
		}
		res, err := p.SendSync(context.Background(), m)
		if err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		fmt.Fprintf(stdout, "%s\n  msgId=%s offsetMsgId=%s queue=%d queueOffset=%d\n",
			res.String(), res.MsgID, res.OffsetMsgID, res.MessageQueue.QueueId, res.QueueOffset)
	}
	return nil
}

func runConsume(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("consume", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ns := fs.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := fs.String("topic", "", "topic (required)")
	group := fs.String("group", "wheelctl_consumer", "consumer group")
	expr := fs.String("tags", "*", "tag expression, e.g. 'TagA || TagB'")
	wait := fs.Duration("for", 0, "stop after this long (0: until interrupted)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *topic == "" {
		return fmt.Errorf("--topic is required")
	}
	rlog.SetLogLevel("error")
	c, err := consumer.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{*ns})),
		consumer.WithGroupName(*group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		return err
	}
	err = c.Subscribe(*topic, consumer.MessageSelector{Type: consumer.TAG, Expression: *expr},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				fmt.Fprintf(stdout, "queue=%d offset=%d msgId=%s tags=%q body=%q\n",
					m.Queue.QueueId, m.QueueOffset, m.MsgId, m.GetTags(), m.Body)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	defer c.Shutdown()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *wait)
		defer cancel()
	}
	<-ctx.Done()
	time.Sleep(100 * time.Millisecond)
	return nil
}
