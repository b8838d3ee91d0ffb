package main

import (
	"context"
	"fmt"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
)

// nativeProducer is wheelmq's own producer (cmd/internal/client/producer): the default
// of send and bench, which costs the client far less CPU than the official
// Go client and so shows more of the broker's own speed.
type nativeProducer struct {
	p *producer.Producer
}

func newNativeProducer(o producerOptions) (messageProducer, error) {
	opts := []producer.Option{
		producer.WithNameServers(admin.NameServers(o.Namesrv)...),
		producer.WithGroup(o.Group),
		producer.WithInstanceName(fmt.Sprintf("wheelctl-%d-%d", time.Now().UnixNano(), instanceSeq.Add(1))),
		producer.WithRetries(o.Retries),
	}
	if o.SendTimeout > 0 {
		opts = append(opts, producer.WithSendTimeout(o.SendTimeout))
	}
	if o.Security.signed() {
		opts = append(opts, producer.WithCredentials(o.Security.creds))
	}
	if o.Security.overTLS() {
		opts = append(opts, producer.WithTLS(o.Security.tlsCfg))
	}
	p, err := producer.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("new native producer: %w", err)
	}
	return &nativeProducer{p: p}, nil
}

// message converts m for the native producer.
func (n *nativeProducer) message(m *outMessage) *producer.Message {
	pm := producer.NewMessage(m.Topic, m.Body)
	if m.Tag != "" {
		pm.WithTag(m.Tag)
	}
	if len(m.Keys) > 0 {
		pm.WithKeys(m.Keys...)
	}
	if !m.DeliverAt.IsZero() {
		pm.WithDeliverAt(m.DeliverAt)
	}
	for k, v := range m.Props {
		pm.WithProperty(k, v)
	}
	return pm
}

func nativeReceipt(r *producer.SendResult) receipt {
	return receipt{MsgID: r.MsgID, OffsetMsgID: r.OffsetMsgID, BrokerName: r.Queue.Broker,
		Queue: int(r.Queue.ID), QueueOffset: r.QueueOffset}
}

func (n *nativeProducer) SendSync(ctx context.Context, m *outMessage) (receipt, error) {
	r, err := n.p.Send(ctx, n.message(m))
	if err != nil {
		return receipt{}, err
	}
	return nativeReceipt(r), nil
}

func (n *nativeProducer) SendAsync(ctx context.Context, m *outMessage, done func(receipt, error)) error {
	return n.p.SendAsync(ctx, n.message(m), func(r *producer.SendResult, err error) {
		if err != nil {
			done(receipt{}, err)
			return
		}
		done(nativeReceipt(r), nil)
	})
}

func (n *nativeProducer) SendOneway(ctx context.Context, m *outMessage) error {
	return n.p.SendOneway(ctx, n.message(m))
}

func (n *nativeProducer) Close() error { return n.p.Close() }
