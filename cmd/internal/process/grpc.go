package process

// The gRPC endpoint (netloop/grpcgw): RocketMQ 5's MessagingService for the
// RocketMQ 5 SDKs, over the broker's API (actors/broker). Started after the
// broker's port, stopped before it. Its advertised address is registered
// with the name servers (the registration's grpcEndpoint), and its routes
// span the cluster: the broker asks its name servers (grpcroutes.go).

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/grpcgw"
)

// GRPCConfig configures the gRPC endpoint.
type GRPCConfig struct {
	// Listen is its address ("" = none; cmd/wheelmq defaults to the
	// host of --listen with port 8081, tests bind port 0).
	Listen string
	// ListenIsDefault marks Listen as the default, not asked for: when its
	// port is taken the endpoint moves aside to a port the kernel picks
	// (logged) instead of failing the start, so that several brokers on
	// one machine start as written; clients find it through any other
	// endpoint's routes.
	ListenIsDefault bool
	// Advertise is the host:port routes carry ("": the broker's
	// advertised host with the bound gRPC port).
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
	var serverTLS *tls.Config
	if n.tls != nil {
		serverTLS = n.tls.ServerConfig()
	}
	g, err := grpcgw.New(grpcgw.Options{
		Listen: c.Listen, MoveAside: c.ListenIsDefault, Advertise: c.Advertise,
		AdvertiseHost: n.broker.advertise.Addr().String(), Broker: n.broker.core,
		BrokerName: bc.BrokerName, TLSMode: n.cfg.TLS.Mode, TLSConfig: serverTLS,
		HandshakeTimeout: n.cfg.TLS.HandshakeTimeout, Guard: n.guard,
		SignatureSkew: c.SignatureSkew, SignatureOffsets: c.SignatureOffsets,
		MaxMessageSize: bc.MaxMessageSize, DefaultQueueNums: int(bc.DefaultQueueNums),
		ForwardSecret: bc.HASecret, ForwardTLS: n.forwardTLS(),
		TypeCheck:  func() bool { return n.broker.Pipeline().Settings().TopicMessageTypeCheck },
		Registerer: n.registry, Logger: n.cfg.Logger,
	})
	if err != nil {
		return err
	}
	if err := g.Start(); err != nil {
		return fmt.Errorf("start grpc endpoint (--grpc-listen %s; another address, or empty for none): %w", c.Listen, err)
	}
	n.grpc = g
	var lookup broker.RouteLookup
	if len(bc.NameServers) > 0 {
		n.grpcRoutes = newNSRoutes(bc.NameServers, bc.NamesrvTLS, auth.Credentials(bc.RegisterCredentials), n.cfg.Logger)
		lookup = n.grpcRoutes
	}
	n.broker.Core().ServeRoutes(lookup, g.Advertise())
	n.broker.pipe.SetGRPCEndpoint(g.Advertise())
	return nil
}

// forwardTLS is the TLS a replica's endpoint dials its master's with
// (grpcgw's forward.go): none unless --tls-mode enforcing, where plaintext
// would be refused. The master's certificate is checked against
// --tls-client-ca when given (its host: the endpoint's), and this
// process's certificate is presented for mutual TLS; without a CA bundle
// the link is encrypted but the master unauthenticated (the forwarded
// calls carry the client's own signature and the forwarded address's
// proof, neither of which discloses a secret).
func (n *Node) forwardTLS() *tls.Config {
	if n.tls == nil || n.cfg.TLS.Mode != netloop.TLSEnforcing {
		return nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}}
	if n.cfg.TLS.ClientCAFile != "" {
		c.RootCAs = n.tls.ClientCAs()
	} else {
		c.InsecureSkipVerify = true // see above: encrypted, the master unauthenticated
	}
	r := n.tls
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return r.Certificate(), nil }
	return c
}

// stopGRPC stops the endpoint (before the broker).
func (n *Node) stopGRPC(ctx context.Context) error {
	if n.grpc == nil {
		return nil
	}
	err := n.grpc.Stop(ctx)
	if n.grpcRoutes != nil {
		n.grpcRoutes.Close()
	}
	return err
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
