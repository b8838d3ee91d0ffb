package grpcgw

// Telemetry (settings), Heartbeat and NotifyClientTermination.

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/storage/meta"
)

// Settings values the gateway answers (the Apache proxy's defaults; see
// docs/grpc.md, "Settings").
const (
	producerMaxAttempts   = 3
	receiveBatchSize      = 32
	defaultLongPolling    = 20 * time.Second
	defaultRequestTimeout = 3 * time.Second
)

// backoffOf is a group's retry policy as the v5 SDKs take it: a push
// consumer that fails a message changes its invisible duration by it (as
// RocketMQ's proxy hands it out: the customized list from its first entry,
// exponential as initial * multiplier^(attempt-1) up to max). The policy's
// jitter is the broker's own (send-back): the SDKs have no field for it.
func backoffOf(p meta.RetryPolicy, attempts int32) *v2.RetryPolicy {
	if p.Type == meta.RetryExponential {
		return &v2.RetryPolicy{MaxAttempts: attempts, Strategy: &v2.RetryPolicy_ExponentialBackoff{
			ExponentialBackoff: &v2.ExponentialBackoff{Initial: durationpb.New(p.Initial), Max: durationpb.New(p.Max),
				Multiplier: float32(p.Multiplier)}}}
	}
	list := p.Next
	if len(list) == 0 {
		list = meta.DefaultRetryNext
	}
	next := make([]*durationpb.Duration, len(list))
	for i, d := range list {
		next[i] = durationpb.New(d)
	}
	return &v2.RetryPolicy{MaxAttempts: attempts,
		Strategy: &v2.RetryPolicy_CustomizedBackoff{CustomizedBackoff: &v2.CustomizedBackoff{Next: next}}}
}

// attach makes t the session's stream for server-pushed commands.
func (s *session) attach(t *teleStream) {
	s.mu.Lock()
	s.tele = t
	s.streams++
	s.lastSeen = time.Now()
	s.mu.Unlock()
}

// detach forgets t (a newer stream stays).
func (s *session) detach(t *teleStream) {
	s.mu.Lock()
	if s.tele == t {
		s.tele = nil
	}
	s.streams--
	s.lastSeen = time.Now()
	s.mu.Unlock()
}

// Telemetry answers each Settings with the merged settings and keeps the
// stream, over which transaction checks go out, until the client closes
// it or the gateway stops.
func (g *Gateway) Telemetry(stream v2.MessagingService_TelemetryServer) error {
	ctx := stream.Context()
	s, st := g.session(ctx)
	if st != nil {
		return stream.Send(&v2.TelemetryCommand{Status: st})
	}
	t := &teleStream{s: stream}
	s.attach(t)
	defer s.detach(t)
	in := make(chan *v2.TelemetryCommand)
	g.goOwned("telemetry recv", func() { // ends when the stream does (the handler's return cancels it)
		defer close(in)
		for {
			cmd, err := stream.Recv()
			if err != nil {
				return
			}
			select {
			case in <- cmd:
			case <-ctx.Done():
				return
			}
		}
	})
	for {
		var cmd *v2.TelemetryCommand
		select {
		case <-g.stop:
			return nil
		case c, ok := <-in:
			if !ok {
				return nil
			}
			cmd = c
		}
		s.touch()
		set, ok := cmd.GetCommand().(*v2.TelemetryCommand_Settings)
		if !ok {
			continue // thread stack traces, verify results: nothing asked for them
		}
		merged, st := g.applySettings(ctx, s, set.Settings)
		reply := &v2.TelemetryCommand{Status: st}
		if merged != nil {
			reply.Command = &v2.TelemetryCommand_Settings{Settings: merged}
		}
		if err := t.send(reply); err != nil {
			return nil
		}
	}
}

// applySettings merges a client's settings with the broker's (the Apache
// proxy's GrpcClientSettingsManager), registers the client, and returns
// the settings to answer.
func (g *Gateway) applySettings(ctx context.Context, s *session, in *v2.Settings) (*v2.Settings, *v2.Status) {
	if in == nil || in.GetPubSub() == nil {
		return nil, statusf(v2.Code_BAD_REQUEST, "settings carry neither publishing nor subscription")
	}
	out := proto.Clone(in).(*v2.Settings)
	out.Metric = &v2.Metric{On: false}
	if out.RequestTimeout == nil {
		out.RequestTimeout = durationpb.New(defaultRequestTimeout)
	}
	switch ps := out.GetPubSub().(type) {
	case *v2.Settings_Publishing:
		attempts := int32(producerMaxAttempts)
		if in.GetBackoffPolicy().GetMaxAttempts() > 0 {
			attempts = in.GetBackoffPolicy().GetMaxAttempts()
		}
		out.BackoffPolicy = &v2.RetryPolicy{MaxAttempts: attempts, Strategy: &v2.RetryPolicy_ExponentialBackoff{
			ExponentialBackoff: &v2.ExponentialBackoff{Initial: durationpb.New(10 * time.Millisecond),
				Max: durationpb.New(time.Second), Multiplier: 2}}}
		ps.Publishing.MaxBodySize = int32(g.opts.MaxMessageSize)
		ps.Publishing.ValidateMessageType = g.opts.TypeCheck()
		var topics []string
		for _, t := range ps.Publishing.GetTopics() {
			topics = append(topics, t.GetName())
		}
		s.register(v2.ClientType_PRODUCER, topics, "", nil)
	case *v2.Settings_Subscription:
		sub := ps.Subscription
		group := sub.GetGroup().GetName()
		gi := g.groupConfig(ctx, s, group)
		fifo := gi.ConsumeMessageOrderly
		batch := int32(receiveBatchSize)
		sub.Fifo, sub.ReceiveBatchSize = &fifo, &batch
		if sub.GetLongPollingTimeout().AsDuration() <= 0 {
			sub.LongPollingTimeout = durationpb.New(defaultLongPolling)
		}
		out.BackoffPolicy = backoffOf(gi.Retry, gi.RetryMaxTimes+1)
		typ := in.GetClientType()
		if typ == v2.ClientType_CLIENT_TYPE_UNSPECIFIED {
			typ = v2.ClientType_SIMPLE_CONSUMER
		}
		if isLiteType(typ) && g.opts.Broker != nil {
			liteSettings(typ, sub, g.opts.Broker.MaxLiteSubscriptions()) // lite.go
		}
		s.register(typ, nil, group, sub.GetSubscriptions())
	}
	s.mu.Lock()
	s.settings = out
	s.mu.Unlock()
	if err := s.heartbeat(ctx); err != nil {
		g.log.Warn().Err(err).Str("client_id", s.id).Msg("registering a gRPC client with the broker failed")
	}
	return out, okStatus()
}

// clientSettings are the session's merged settings (nil: none yet).
func (s *session) clientSettings() *v2.Settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settings
}

// Heartbeat keeps the session and the client's registration alive.
func (g *Gateway) Heartbeat(ctx context.Context, req *v2.HeartbeatRequest) (*v2.HeartbeatResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.HeartbeatResponse{Status: st}, nil
	}
	if grp := req.GetGroup().GetName(); grp != "" {
		s.register(req.GetClientType(), nil, grp, nil)
	}
	if err := s.heartbeat(ctx); err != nil {
		return &v2.HeartbeatResponse{Status: internalStatus(err)}, nil
	}
	return &v2.HeartbeatResponse{Status: okStatus()}, nil
}

// NotifyClientTermination unregisters the client and ends its session
// (held auto-renew handles come back within about a second).
func (g *Gateway) NotifyClientTermination(ctx context.Context, _ *v2.NotifyClientTerminationRequest) (*v2.NotifyClientTerminationResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.NotifyClientTerminationResponse{Status: st}, nil
	}
	s.end(ctx, true)
	return &v2.NotifyClientTerminationResponse{Status: okStatus()}, nil
}
