package mqclient

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Defaults of Config.
const (
	// DefaultNameServerTimeout bounds one request to one name server.
	DefaultNameServerTimeout = 3 * time.Second
	// DefaultDialTimeout bounds one connection attempt.
	DefaultDialTimeout = 3 * time.Second
	// DefaultHeartbeatInterval is how often brokers get a heartbeat (as the
	// RocketMQ clients).
	DefaultHeartbeatInterval = 30 * time.Second
	// DefaultRouteRefreshInterval is how often cached routes are refreshed
	// (as the RocketMQ clients).
	DefaultRouteRefreshInterval = 30 * time.Second
	// DefaultHeartbeatTimeout bounds one heartbeat request.
	DefaultHeartbeatTimeout = 3 * time.Second
	// DefaultTopicQueueNums caps the queues of a route borrowed from TBW102,
	// and is what a broker creating the topic is asked for.
	DefaultTopicQueueNums = 4
	// AutoCreateTopic is the template topic of auto-created topics.
	AutoCreateTopic = "TBW102"
	// ClientVersion is the MQVersion ordinal the client reports (V5_3_3):
	// at or above V4_9_4 (401), Java name servers answer standard JSON.
	ClientVersion = remoting.BrokerVersion
)

// minRefreshGap is the least time between two immediate refreshes of one
// topic asked for with RefreshSoon.
const minRefreshGap = 100 * time.Millisecond

// Config configures an Instance. NameServers is required; zero values of
// the other fields mean their defaults.
type Config struct {
	// NameServers lists the name servers ("host:port"); lookups try them in
	// turn.
	NameServers []string
	// InstanceName distinguishes client instances of one process; the
	// default is the process id. Producers with the same client id share an
	// Instance.
	InstanceName string
	// ClientIP is the address put in the client id and in message ids; the
	// default is the first non-loopback IPv4 address of the host.
	ClientIP netip.Addr
	// JSONHeaders sends request headers as JSON instead of the default
	// ROCKETMQ binary encoding.
	JSONHeaders bool
	// NameServerTimeout bounds one request to one name server.
	NameServerTimeout time.Duration
	// DialTimeout bounds one connection attempt.
	DialTimeout time.Duration
	// HeartbeatInterval is the period of heartbeats to brokers.
	HeartbeatInterval time.Duration
	// RouteRefreshInterval is the period of route refreshes.
	RouteRefreshInterval time.Duration
	// DefaultTopicQueueNums caps routes borrowed from TBW102.
	DefaultTopicQueueNums int
	// MaxQueuedBytes bounds the bytes queued for writing on one connection
	// (see remoting.ClientOptions.MaxQueuedBytes).
	MaxQueuedBytes int
	// Credentials, when set, sign every request of the instance: route
	// lookups at the name servers, heartbeats, sends and unregistering at
	// the brokers (RocketMQ's signature, netloop/auth).
	Credentials auth.Credentials
	// TLS, when set, makes every connection of the instance speak TLS
	// with this client configuration (see remoting.ClientOptions.TLS):
	// nil is plaintext.
	TLS *tls.Config
	// Logger receives the instance's events. The zero value logs nothing.
	Logger zerolog.Logger
}

// withDefaults returns c with defaults filled in, or an error when it cannot
// work.
func (c Config) withDefaults() (Config, error) {
	ns := make([]string, 0, len(c.NameServers))
	for _, a := range c.NameServers {
		if a = strings.TrimSpace(a); a != "" {
			ns = append(ns, a)
		}
	}
	if len(ns) == 0 {
		return c, fmt.Errorf("mqclient config: %w", ErrNoNameServer)
	}
	for _, a := range ns {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return c, fmt.Errorf("mqclient config: name server %q is not host:port: %w", a, err)
		}
	}
	c.NameServers = ns
	if c.InstanceName == "" {
		c.InstanceName = strconv.Itoa(os.Getpid())
	}
	if !c.ClientIP.IsValid() {
		c.ClientIP = LocalIP()
	}
	setDur := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	setDur(&c.NameServerTimeout, DefaultNameServerTimeout)
	setDur(&c.DialTimeout, DefaultDialTimeout)
	setDur(&c.HeartbeatInterval, DefaultHeartbeatInterval)
	setDur(&c.RouteRefreshInterval, DefaultRouteRefreshInterval)
	if c.DefaultTopicQueueNums <= 0 {
		c.DefaultTopicQueueNums = DefaultTopicQueueNums
	}
	return c, nil
}

// ClientID returns the client id of c: "IP@InstanceName" (after defaults).
func (c Config) ClientID() string {
	ip := c.ClientIP
	if !ip.IsValid() {
		ip = LocalIP()
	}
	name := c.InstanceName
	if name == "" {
		name = strconv.Itoa(os.Getpid())
	}
	return ip.String() + "@" + name
}

// sameNetwork reports whether two configurations can share an instance:
// the same name servers (in any order), header encoding, credentials and
// TLS configuration (the same *tls.Config, or none): an instance never
// signs for another identity or dials with other TLS settings than asked.
func sameNetwork(a, b Config) bool {
	x, y := slices.Clone(a.NameServers), slices.Clone(b.NameServers)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y) && a.JSONHeaders == b.JSONHeaders && a.Credentials == b.Credentials && a.TLS == b.TLS
}

// describeNetwork describes what sameNetwork compares, for errors: never
// a secret.
func describeNetwork(c Config) string {
	return fmt.Sprintf("name servers %v, JSON headers %v, %v, TLS %v", c.NameServers, c.JSONHeaders, c.Credentials, c.TLS != nil)
}

// Serialize returns the header encoding of c's requests.
func (c Config) Serialize() remoting.SerializeType {
	if c.JSONHeaders {
		return remoting.SerializeJSON
	}
	return remoting.SerializeRocketMQ
}

// LocalIP returns the first non-loopback IPv4 address of the host's
// interfaces, or 127.0.0.1 when there is none.
func LocalIP() netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if ok && ip.Unmap().Is4() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				return ip.Unmap()
			}
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}
