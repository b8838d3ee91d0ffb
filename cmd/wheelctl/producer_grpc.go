package main

// The RocketMQ 5 SDK producer (--protocol grpc): the official Go v5 client
// (github.com/apache/rocketmq-clients/golang/v5) against a broker's gRPC
// endpoint, behind the same messageProducer interface as the remoting
// clients, so every send benchmark can compare the two protocols.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
)

// grpcLogOnce points the v5 SDK's own log file (zap, by default under
// $HOME/logs/rocketmqlogs) at the temp directory and keeps it at error
// level, unless the user set either.
var grpcLogOnce sync.Once

func quietGRPCClientLogs() {
	grpcLogOnce.Do(func() {
		if os.Getenv(rmq.CLIENT_LOG_ROOT) == "" {
			_ = os.Setenv(rmq.CLIENT_LOG_ROOT, filepath.Join(os.TempDir(), "wheelctl-rocketmq-v5"))
		}
		if os.Getenv(rmq.CLIENT_LOG_LEVEL) == "" {
			_ = os.Setenv(rmq.CLIENT_LOG_LEVEL, "error")
		}
		rmq.ResetLogger()
	})
}

// errGRPCEndpoint says what --protocol grpc needs.
var errGRPCEndpoint = errors.New("--protocol grpc needs the broker's gRPC endpoint: give --grpc-endpoint HOST:PORT")

// grpcProducer is the v5 SDK's producer.
type grpcProducer struct{ p rmq.Producer }

// newGRPCProducer starts a v5 producer for o.Topics at o.GRPCEndpoint. The
// SDK's TLS switch (rmq.EnableSsl) is process-global: --tls turns it on
// (the SDK never verifies the server's certificate, so --tls-insecure is
// required, as for the official remoting client).
func newGRPCProducer(o producerOptions) (messageProducer, error) {
	if o.GRPCEndpoint == "" {
		return nil, usageErr(errGRPCEndpoint)
	}
	useTLS, err := o.Security.officialTLS()
	if err != nil {
		return nil, err
	}
	quietGRPCClientLogs()
	rmq.EnableSsl = useTLS
	cfg := &rmq.Config{Endpoint: o.GRPCEndpoint, Credentials: &credentials.SessionCredentials{}}
	if c := o.Security.officialCredentials(); !c.IsEmpty() {
		cfg.Credentials = &credentials.SessionCredentials{AccessKey: c.AccessKey, AccessSecret: c.SecretKey}
	}
	opts := []rmq.ProducerOption{rmq.WithTopics(o.Topics...)}
	if o.Retries > 0 {
		opts = append(opts, rmq.WithMaxAttempts(int32(o.Retries+1)))
	}
	p, err := rmq.NewProducer(cfg, opts...)
	if err != nil {
		return nil, fmt.Errorf("new v5 producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start v5 producer at %s: %w", o.GRPCEndpoint, err)
	}
	return &grpcProducer{p: p}, nil
}

// message converts m for the v5 SDK.
func (g *grpcProducer) message(m *outMessage) *rmq.Message {
	msg := &rmq.Message{Topic: m.Topic, Body: m.Body}
	if m.Tag != "" {
		msg.SetTag(m.Tag)
	}
	if len(m.Keys) > 0 {
		msg.SetKeys(m.Keys...)
	}
	if !m.DeliverAt.IsZero() {
		msg.SetDelayTimestamp(m.DeliverAt)
	}
	for k, v := range m.Props {
		msg.AddProperty(k, v)
	}
	return msg
}

// grpcReceipt turns the SDK's receipts (one per message sent) into ours.
func grpcReceipt(rs []*rmq.SendReceipt) (receipt, error) {
	if len(rs) == 0 || rs[0] == nil {
		return receipt{}, errors.New("v5 send: no receipt in the answer")
	}
	return receipt{MsgID: rs[0].MessageID, QueueOffset: rs[0].Offset}, nil
}

func (g *grpcProducer) SendSync(ctx context.Context, m *outMessage) (receipt, error) {
	rs, err := g.p.Send(ctx, g.message(m))
	if err != nil {
		return receipt{}, err
	}
	return grpcReceipt(rs)
}

func (g *grpcProducer) SendAsync(ctx context.Context, m *outMessage, done func(receipt, error)) error {
	g.p.SendAsync(ctx, g.message(m), func(_ context.Context, rs []*rmq.SendReceipt, err error) {
		if err != nil {
			done(receipt{}, err)
			return
		}
		done(grpcReceipt(rs))
	})
	return nil
}

// SendOneway has no v5 counterpart: the SDK always waits for the answer,
// so it sends asynchronously and drops the answer.
func (g *grpcProducer) SendOneway(ctx context.Context, m *outMessage) error {
	g.p.SendAsync(ctx, g.message(m), func(context.Context, []*rmq.SendReceipt, error) {})
	return nil
}

func (g *grpcProducer) Close() error { return g.p.GracefulStop() }
