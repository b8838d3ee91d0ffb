package producer

import (
	"compress/zlib"
	"crypto/tls"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/cmd/internal/client/mqclient"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// Defaults of the producer's options.
const (
	// DefaultGroup is the producer group when none is given.
	DefaultGroup = "DEFAULT_PRODUCER"
	// DefaultSendTimeout bounds one send attempt.
	DefaultSendTimeout = 3 * time.Second
	// DefaultRetries is the number of extra attempts of a failed sync or
	// async send (RocketMQ's retryTimesWhenSendFailed).
	DefaultRetries = 2
	// DefaultMaxInflight bounds async sends in flight (permits).
	DefaultMaxInflight = 65535
	// DefaultMaxInflightBytes bounds the bodies of async sends in flight.
	DefaultMaxInflightBytes = 128 << 20
	// DefaultMaxMessageSize is the largest body (and batch) accepted: 4 MiB.
	DefaultMaxMessageSize = 4 << 20
	// DefaultCompressThreshold is the body size from which bodies are
	// compressed: 4 KiB.
	DefaultCompressThreshold = 4 << 10
	// DefaultCompressLevel is the zlib level used.
	DefaultCompressLevel = 5
	// IsolationDuration is how long a broker is avoided after a failed send
	// when fault tolerance is on.
	IsolationDuration = 30 * time.Second
)

// config is the producer's configuration after options.
type config struct {
	client            mqclient.Config
	group             string
	sendTimeout       time.Duration
	retries           int
	maxInflight       int
	maxInflightBytes  int
	maxMessageSize    int
	compressThreshold int
	compressLevel     int
	faultTolerance    bool
	selector          Selector
	hooks             []Hook
	callbackWorkers   int
	log               zerolog.Logger
}

// Option configures a Producer.
type Option func(*config)

// WithNameServers sets the name servers ("host:port"), tried in turn.
// Required.
func WithNameServers(addrs ...string) Option {
	return func(c *config) { c.client.NameServers = append(c.client.NameServers, addrs...) }
}

// WithGroup sets the producer group (default DEFAULT_PRODUCER).
func WithGroup(group string) Option { return func(c *config) { c.group = group } }

// WithInstanceName sets the instance part of the client id IP@instance
// (default: the process id). Producers with the same client id share one
// client instance: connections, routes, heartbeats.
func WithInstanceName(name string) Option {
	return func(c *config) { c.client.InstanceName = name }
}

// WithSendTimeout bounds each send attempt (default 3 s).
func WithSendTimeout(d time.Duration) Option { return func(c *config) { c.sendTimeout = d } }

// WithRetries sets the extra attempts of a failed sync or async send
// (default 2). Oneway sends retry only errors before the request left.
func WithRetries(n int) Option { return func(c *config) { c.retries = n } }

// WithMaxInflight bounds the async sends in flight by count and by body
// bytes (defaults 65535 and 128 MiB); SendAsync waits for a permit
// (back-pressure) within its context and the send timeout.
func WithMaxInflight(count, bytes int) Option {
	return func(c *config) { c.maxInflight, c.maxInflightBytes = count, bytes }
}

// WithMaxMessageSize sets the largest body, and batch, accepted (default
// 4 MiB).
func WithMaxMessageSize(n int) Option { return func(c *config) { c.maxMessageSize = n } }

// WithCompression sets the body size from which single messages are
// compressed with zlib, and the level (defaults 4 KiB and 5).
func WithCompression(threshold, level int) Option {
	return func(c *config) { c.compressThreshold, c.compressLevel = threshold, level }
}

// WithFaultTolerance turns latency fault tolerance on: a broker whose sends
// are slow is avoided for a while (see NotAvailableFor) and a broker whose
// send failed is avoided for IsolationDuration.
func WithFaultTolerance(on bool) Option { return func(c *config) { c.faultTolerance = on } }

// WithSelector replaces the default round-robin queue selection.
func WithSelector(s Selector) Option { return func(c *config) { c.selector = s } }

// WithHooks adds send hooks, run in order.
func WithHooks(h ...Hook) Option { return func(c *config) { c.hooks = append(c.hooks, h...) } }

// WithJSONHeaders sends request headers as JSON instead of the default
// ROCKETMQ binary encoding.
func WithJSONHeaders() Option { return func(c *config) { c.client.JSONHeaders = true } }

// WithCredentials signs every request the producer's client instance
// sends (route lookups at the name servers, heartbeats, sends) with
// RocketMQ's signature: what a broker or name server with ACL on needs.
// Producers sharing a client id must use the same credentials (give each
// identity its own WithInstanceName).
func WithCredentials(c auth.Credentials) Option {
	return func(cfg *config) { cfg.client.Credentials = c }
}

// WithTLS makes every connection of the producer's client instance (name
// servers and brokers) speak TLS with cfg: set RootCAs to trust a private
// CA, or InsecureSkipVerify to skip verifying the server (no protection
// against a man in the middle). A nil cfg is plaintext, the default.
// Producers sharing a client id must use the same *tls.Config.
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) { c.client.TLS = cfg }
}

// WithCallbackWorkers sets how many goroutines run async callbacks and
// retries (default GOMAXPROCS).
func WithCallbackWorkers(n int) Option { return func(c *config) { c.callbackWorkers = n } }

// WithLogger sets the logger (default: none).
func WithLogger(l zerolog.Logger) Option {
	return func(c *config) { c.log = l; c.client.Logger = l }
}

// WithClientConfig adjusts the client instance's configuration (name
// server timeout, heartbeat and route refresh intervals, ...); name servers,
// instance name, JSON headers, logger, credentials and TLS set by the
// other options win.
func WithClientConfig(f func(*mqclient.Config)) Option {
	return func(c *config) {
		keep := c.client
		f(&c.client)
		c.client.NameServers, c.client.InstanceName = keep.NameServers, keep.InstanceName
		c.client.JSONHeaders, c.client.Logger = keep.JSONHeaders, keep.Logger
		c.client.Credentials, c.client.TLS = keep.Credentials, keep.TLS
	}
}

// newConfig applies opts over the defaults and checks the result.
func newConfig(opts []Option) (config, error) {
	c := config{
		group:             DefaultGroup,
		sendTimeout:       DefaultSendTimeout,
		retries:           DefaultRetries,
		maxInflight:       DefaultMaxInflight,
		maxInflightBytes:  DefaultMaxInflightBytes,
		maxMessageSize:    DefaultMaxMessageSize,
		compressThreshold: DefaultCompressThreshold,
		compressLevel:     DefaultCompressLevel,
		callbackWorkers:   runtime.GOMAXPROCS(0),
		log:               zerolog.Nop(),
	}
	c.client.Logger = zerolog.Nop()
	for _, o := range opts {
		o(&c)
	}
	var errs []string
	if c.group == "" {
		errs = append(errs, "empty producer group")
	}
	if c.sendTimeout <= 0 {
		errs = append(errs, fmt.Sprintf("send timeout %v must be positive", c.sendTimeout))
	}
	if c.retries < 0 {
		errs = append(errs, fmt.Sprintf("retries %d must not be negative", c.retries))
	}
	if c.maxInflight < 1 || c.maxInflightBytes < 1 {
		errs = append(errs, fmt.Sprintf("max in flight %d / %d bytes must be positive", c.maxInflight, c.maxInflightBytes))
	}
	if c.maxMessageSize < 1 {
		errs = append(errs, fmt.Sprintf("max message size %d must be positive", c.maxMessageSize))
	}
	if c.compressLevel < zlib.HuffmanOnly || c.compressLevel > zlib.BestCompression {
		errs = append(errs, fmt.Sprintf("compression level %d is not a zlib level", c.compressLevel))
	}
	if c.compressThreshold < 1 {
		errs = append(errs, fmt.Sprintf("compression threshold %d must be positive", c.compressThreshold))
	}
	if c.callbackWorkers < 1 {
		errs = append(errs, fmt.Sprintf("callback workers %d must be positive", c.callbackWorkers))
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("producer options: %s", strings.Join(errs, "; "))
	}
	return c, nil
}
