package process

// The gRPC endpoint (netloop/grpcgw): RocketMQ 5's MessagingService for the
// RocketMQ 5 SDKs, translated into remoting requests to the broker's own
// port. Started after the broker's port, stopped before it.

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/grpcgw"
)

// GRPCConfig configures the gRPC endpoint.
type GRPCConfig struct {
	// Listen is its address ("" = none; cmd/wheelmq defaults to
	// 0.0.0.0:8081, tests use a free port).
	Listen string
	// Advertise is the host:port routes carry ("": the listen address,
	// a wildcard host replaced like the broker's advertised host).
	Advertise string
	// SignatureSkew and SignatureOffsets bound the signed date of a call
	// under an ACL (grpcgw.Options; zero skew: the default).
	SignatureSkew    time.Duration
	SignatureOffsets []time.Duration
}

// startGRPC starts the endpoint when configured (a broker must run).
func (n *Node) startGRPC() error {
	c := n.cfg.GRPC
	if c.Listen == "" || n.broker == nil {
		return nil
	}
	bc := n.broker.cfg
	var brokerTLS *tls.Config
	if n.cfg.TLS.Mode == netloop.TLSEnforcing {
		brokerTLS = n.tls.ClientConfig() // the broker's port takes only TLS
	}
	var serverTLS *tls.Config
	if n.tls != nil {
		serverTLS = n.tls.ServerConfig()
	}
	g, err := grpcgw.New(grpcgw.Options{
		Listen: c.Listen, Advertise: c.Advertise, BrokerAddr: dialable(n.broker.Addr()), BrokerTLS: brokerTLS, Broker: n.broker.Core(),
		BrokerName: bc.BrokerName, TLSMode: n.cfg.TLS.Mode, TLSConfig: serverTLS,
		HandshakeTimeout: n.cfg.TLS.HandshakeTimeout, Guard: n.guard,
		SignatureSkew: c.SignatureSkew, SignatureOffsets: c.SignatureOffsets,
		MaxMessageSize: bc.MaxMessageSize, AutoCreateTopic: bc.AutoCreateTopic, DefaultQueueNums: int(bc.DefaultQueueNums),
		TypeCheck:  func() bool { return n.broker.Pipeline().Settings().TopicMessageTypeCheck },
		Registerer: n.registry, Logger: n.cfg.Logger,
	})
	if err != nil {
		return err
	}
	if err := g.Start(); err != nil {
		return fmt.Errorf("start grpc endpoint: %w", err)
	}
	n.grpc = g
	return nil
}

// stopGRPC stops the endpoint (before the broker).
func (n *Node) stopGRPC(ctx context.Context) error {
	if n.grpc == nil {
		return nil
	}
	return n.grpc.Stop(ctx)
}

// GRPCAddr is the gRPC endpoint's bound address ("" if none).
func (n *Node) GRPCAddr() string {
	if n.grpc == nil {
		return ""
	}
	return dialable(n.grpc.Addr())
}

// GRPC is the running gRPC endpoint (nil if none).
func (n *Node) GRPC() *grpcgw.Gateway { return n.grpc }
