package main

// The producing side of send and bench, behind a small interface:
// wheelmq's native producer (cmd/internal/client/producer, the default) and the
// official RocketMQ Go client (--client official) implement it.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
)

// outMessage is a message to send, independent of the client library.
type outMessage struct {
	Topic     string
	Tag       string
	Keys      []string
	Body      []byte
	DeliverAt time.Time // non-zero: a timer message due then (TIMER_DELIVER_MS)
	// Props are user properties (a recurring timer's WHEEL_SCHEDULE).
	Props map[string]string
}

// receipt is what the broker answered to a send.
type receipt struct {
	MsgID       string // UNIQ_KEY, the id consumers see
	OffsetMsgID string // store host + CommitLog offset; what cancel takes
	BrokerName  string
	Queue       int
	QueueOffset int64
}

// messageProducer sends messages to a name server's brokers.
type messageProducer interface {
	// SendSync sends m and waits for the answer.
	SendSync(ctx context.Context, m *outMessage) (receipt, error)
	// SendAsync sends m; done runs once with the answer, on another goroutine.
	SendAsync(ctx context.Context, m *outMessage, done func(receipt, error)) error
	// SendOneway sends m without waiting for any answer.
	SendOneway(ctx context.Context, m *outMessage) error
	// Close stops the producer.
	Close() error
}

// producerOptions configure a producer.
type producerOptions struct {
	Namesrv     string
	Group       string
	Retries     int
	SendTimeout time.Duration
	// Security signs the requests and sets TLS (nil: plaintext, unsigned).
	Security *security
	// GRPCEndpoint is the broker's gRPC endpoint (host:port), for the
	// RocketMQ 5 SDK producer (kind "grpc").
	GRPCEndpoint string
	// Topics are the topics the producer will send to (the v5 SDK
	// fetches their routes at start; the remoting clients ignore it).
	Topics []string
}

// producerKinds are the producers --client can name.
var producerKinds = map[string]func(producerOptions) (messageProducer, error){
	"native":   newNativeProducer, // cmd/internal/client/producer
	"official": newGoProducer,     // the official RocketMQ Go client
	"go":       newGoProducer,     // the name --client had before the native producer
	"grpc":     newGRPCProducer,   // the RocketMQ 5 Go SDK over gRPC (--protocol grpc)
}

// clientNames lists the --client values.
func clientNames() string {
	var names []string
	for k := range producerKinds {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// newProducer starts a producer of the given kind.
func newProducer(kind string, o producerOptions) (messageProducer, error) {
	mk, ok := producerKinds[kind]
	if !ok {
		return nil, usagef("--client %q: want one of %s", kind, clientNames())
	}
	return mk(o)
}

var instanceSeq atomic.Int64

// goProducer is the official RocketMQ Go client.
type goProducer struct {
	p interface {
		Start() error
		Shutdown() error
		SendSync(ctx context.Context, mq ...*primitive.Message) (*primitive.SendResult, error)
		SendAsync(ctx context.Context, f func(context.Context, *primitive.SendResult, error), mq ...*primitive.Message) error
		SendOneWay(ctx context.Context, mq ...*primitive.Message) error
	}
}

func newGoProducer(o producerOptions) (messageProducer, error) {
	opts := []producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver(admin.NameServers(o.Namesrv))),
		producer.WithGroupName(o.Group),
		producer.WithInstanceName(fmt.Sprintf("wheelctl-%d-%d", time.Now().UnixNano(), instanceSeq.Add(1))),
		producer.WithRetry(o.Retries),
	}
	if o.SendTimeout > 0 {
		opts = append(opts, producer.WithSendMsgTimeout(o.SendTimeout))
	}
	useTLS, err := o.Security.officialTLS()
	if err != nil {
		return nil, err
	}
	// Always given: WithTls writes a process-global, so each client sets it.
	opts = append(opts, producer.WithTls(useTLS))
	if c := o.Security.officialCredentials(); !c.IsEmpty() {
		opts = append(opts, producer.WithCredentials(c))
	}
	p, err := producer.NewDefaultProducer(opts...)
	if err != nil {
		return nil, fmt.Errorf("new producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start producer: %w", err)
	}
	return &goProducer{p: p}, nil
}

// message converts m for the Go client.
func (g *goProducer) message(m *outMessage) *primitive.Message {
	pm := primitive.NewMessage(m.Topic, m.Body)
	if m.Tag != "" {
		pm.WithTag(m.Tag)
	}
	if len(m.Keys) > 0 {
		pm.WithKeys(m.Keys)
	}
	if !m.DeliverAt.IsZero() {
		pm.WithDelayTimestamp(m.DeliverAt)
	}
	for k, v := range m.Props {
		pm.WithProperty(k, v)
	}
	return pm
}

func toReceipt(r *primitive.SendResult) receipt {
	rc := receipt{MsgID: r.MsgID, OffsetMsgID: r.OffsetMsgID, QueueOffset: r.QueueOffset}
	if r.MessageQueue != nil {
		rc.BrokerName, rc.Queue = r.MessageQueue.BrokerName, r.MessageQueue.QueueId
	}
	return rc
}

// sendError turns a non-OK send status into an error.
func sendError(r *primitive.SendResult) error {
	if r.Status != primitive.SendOK {
		return fmt.Errorf("send status %s", r.String())
	}
	return nil
}

func (g *goProducer) SendSync(ctx context.Context, m *outMessage) (receipt, error) {
	r, err := g.p.SendSync(ctx, g.message(m))
	if err != nil {
		return receipt{}, err
	}
	return toReceipt(r), sendError(r)
}

func (g *goProducer) SendAsync(ctx context.Context, m *outMessage, done func(receipt, error)) error {
	return g.p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
		if err != nil {
			done(receipt{}, err)
			return
		}
		done(toReceipt(r), sendError(r))
	}, g.message(m))
}

func (g *goProducer) SendOneway(ctx context.Context, m *outMessage) error {
	return g.p.SendOneWay(ctx, g.message(m))
}

func (g *goProducer) Close() error { return g.p.Shutdown() }
