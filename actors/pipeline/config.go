package pipeline

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/access"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/registrar"
	"github.com/wheelmq/wheelmq/actors/retention"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// DefaultMaxFrame is the default limit on one remoting frame's total
// length (Config.MaxFrame): a 4 MiB message with room for its header,
// the remoting codec's own default (netloop/remoting.DefaultMaxFrame; a
// router test keeps them equal).
const DefaultMaxFrame = 4<<20 + 256<<10

// Config is everything a broker needs. Build it with DefaultConfig and
// check it with Validate.
type Config struct {
	// DataDir is the store root.
	DataDir string
	// Listen is the remoting address ("0.0.0.0:10911"; port 0 picks one).
	Listen string
	// Advertise is the address put into routes and message ids; empty: the
	// listen address, with a wildcard host replaced by a reachable one.
	Advertise string
	// NameServers are the name servers to register with.
	NameServers []string
	// NamesrvTLS, when not nil, makes the registrations with the name
	// servers speak TLS with this configuration (nil: plaintext).
	NamesrvTLS *tls.Config
	// NameServerCalls are the registrar's calls to the name servers
	// (registrar.Calls; the process gives netloop/nscalls's, built from
	// NamesrvTLS and RegisterCredentials). Required when NameServers is
	// not empty and the registrar is started.
	NameServerCalls registrar.Calls
	// BrokerName and Cluster identify the broker in routes.
	BrokerName string
	Cluster    string
	// Flush selects async or sync (group-commit) flushing.
	Flush writer.FlushMode
	// AutoCreateTopic lets producers create topics through TBW102.
	AutoCreateTopic bool
	// AutoCreateGroup creates a subscription group with RocketMQ's defaults
	// on the first heartbeat, pull or send-back that names an unknown one
	// (default true); without it such pulls are refused.
	AutoCreateGroup bool
	// TopicMessageTypeCheck refuses a send whose message type (from its
	// properties: meta.MessageTypeOf) the topic's message.type does not
	// take, as RocketMQ 5's proxy (enableTopicMessageTypeCheck, default
	// true) does; topics with no type or MIXED take every type.
	TopicMessageTypeCheck bool
	// MixedMessageType lets UPDATE_AND_CREATE_TOPIC set message.type=MIXED
	// (RocketMQ's enableMixedMessageType, default false).
	MixedMessageType bool
	// DefaultQueueNums is the queue count of TBW102 (default 8).
	DefaultQueueNums int32
	// MaxMessageSize caps a message body (default 4 MiB).
	MaxMessageSize int
	// MaxFrame caps one remoting frame (default DefaultMaxFrame).
	MaxFrame int
	// SegmentSize is the CommitLog segment size (0: default 1 GiB).
	SegmentSize int64
	// RegisterInterval is how often the broker re-registers (default 30 s).
	RegisterInterval time.Duration
	// RouteWait bounds how long the answer to a request that made a topic
	// (the send that auto-created it, UPDATE_AND_CREATE_TOPIC, a heartbeat
	// that made a %RETRY% topic) waits for the name servers to acknowledge
	// a registration that carries it (default registrar.DefaultRouteWait,
	// 1 s): past it the request is answered anyway, its message stored.
	RouteWait time.Duration
	// MaxInflightPerConn bounds the requests of every kind (sends, pulls,
	// parked long polls included, heartbeats, admin requests) one
	// connection has waiting for an answer: past it a request is refused
	// with SYSTEM_BUSY (default DefaultMaxInflightPerConn).
	MaxInflightPerConn int64
	// MaxParkedPullsPerConn bounds the long polls one connection has parked
	// (default pull.DefaultMaxParkedPerConn): past it a long poll that
	// finds nothing is answered at once with PULL_NOT_FOUND.
	MaxParkedPullsPerConn int
	// MaxConnOutput is the soft cap on a connection's buffered output, the
	// answers it has not read yet (bytes; 0: netloop.DefaultMaxOutput,
	// 32 MiB; negative: no caps): above it its requests are refused with
	// SYSTEM_BUSY. Four times it is the hard cap, past which the
	// connection is closed (netloop.Config.MaxOutputHard).
	MaxConnOutput int64
	// SlowConnTimeout closes a connection whose buffered output stays
	// above MaxConnOutput this long (0: netloop.DefaultStallTimeout, 30 s;
	// negative: never).
	SlowConnTimeout time.Duration
	// IdleConnTimeout closes a remoting connection (the broker's port and
	// the embedded name server's) that has sent no request byte this long
	// after connecting (0: netloop.DefaultIdleTimeout, 10 s; negative:
	// never).
	IdleConnTimeout time.Duration
	// PullWorkers is how many pull_read stages read for pulls side by side
	// (default pull.DefaultReaders, at most pull.MaxReaders).
	PullWorkers int
	// LiteExpiration is how long a lite topic of a LITE topic without a
	// lite.topic.expiration attribute lives without a new message before
	// it is deleted (0: forever; docs/lite.md).
	LiteExpiration time.Duration
	// MaxLiteSubscriptions bounds the lite topics one LitePushConsumer
	// subscribes to (0: DefaultMaxLiteSubscriptions).
	MaxLiteSubscriptions int
	// LiteResidentMax bounds the lite topics kept in memory: past it the
	// lite topics with no subscriber and nothing in flight are evicted to
	// the spill store, the least recently written first (0: no bound;
	// docs/lite.md).
	LiteResidentMax int
	// LiteIdleEvict evicts a lite topic with no subscriber and nothing in
	// flight that had no new message this long (0: never; docs/lite.md).
	LiteIdleEvict time.Duration
	// MaxWriterBacklog bounds appends queued at the writer before
	// SYSTEM_BUSY (default 65536).
	MaxWriterBacklog int64
	// OnCorruption says what the stages do with a damaged record they meet
	// while running: skip it (count, log, go on; the zero value) or stop.
	OnCorruption corruption.Policy
	// Index keeps the message index by KEYS and UNIQ_KEY (QUERY_MESSAGE,
	// VIEW_MESSAGE_BY_ID; default true).
	Index bool
	// TimerEnabled accepts timer and delay messages (default true).
	TimerEnabled bool
	// TimerDequeueWorkers is how many dequeue_message stages read and
	// rebuild released timers side by side (default
	// timer.DefaultDequeueWorkers, at most timer.MaxDequeueWorkers).
	TimerDequeueWorkers int
	// MaxTimerDelay is the longest accepted delay (default 365 days).
	MaxTimerDelay time.Duration
	// ScheduleMinInterval is the shortest accepted interval between two
	// fires of a recurring timer (WHEEL_SCHEDULE; default 1 s).
	ScheduleMinInterval time.Duration
	// TimerFaults injects stage failures in tests (nil in production; no
	// flag sets it). Stage "commitlog" fails the writer after an append.
	TimerFaults *timer.Faults
	// WriterStall is called by the commitlog writer after each append, on
	// its goroutine (tests: a hook that blocks leaves the writer stuck in
	// a message; nil in production, no flag sets it).
	WriterStall func()
	// DrainTimeout bounds how long Drain waits for the stages to answer
	// what they hold (0: 10 s); StopStageTimeout how long stopping waits for
	// one stage (0: 5 s). Both are also bounded by the caller's deadline.
	DrainTimeout, StopStageTimeout time.Duration
	// StoreFS replaces the file system under every file of the data
	// directory: CommitLog, consume queues, index, metadata, the timer
	// store and the directory lock (fault injection and crash simulation
	// in tests, see storage/vfs/vfstest and storage/vfs/crashfs; nil in
	// production: no flag sets it).
	StoreFS vfs.FS
	// MetadataLog journals consumer offsets, topics and subscription
	// groups as CommitLog system records (actors/metalog) and applies
	// those of the log, so that they replicate with it (turn it on with
	// replication).
	MetadataLog bool
	// OffsetFlushInterval is how often committed consumer offsets are
	// persisted (0: 5 s, RocketMQ's flushConsumerOffsetInterval).
	OffsetFlushInterval time.Duration
	// TimerPutTimeout is how long a timer write-back may wait for the
	// writer before it is retried (0: 10 s).
	TimerPutTimeout time.Duration
	// TransactionTimeout is the minimum age of an open transaction before
	// its producer group is first asked about it (default 6 s; a message's
	// CHECK_IMMUNITY_TIME_IN_SECONDS can raise it).
	TransactionTimeout time.Duration
	// TransactionCheckInterval is the pause between two checks of one
	// transaction (default 60 s).
	TransactionCheckInterval time.Duration
	// TransactionCheckMax is how many checks a transaction gets before it
	// is given up (default 15).
	TransactionCheckMax int
	// TransactionTick is how often the transaction stage looks for due
	// checks and persists its state (default 1 s).
	TransactionTick time.Duration
	// OrderlyLockExpiry is how long an orderly consumer's queue lock lives
	// without renewal (default 60 s; clients renew every 20 s).
	OrderlyLockExpiry time.Duration
	// Retention is how long a CommitLog segment is kept after its newest
	// message was stored (default 72 h, RocketMQ's fileReservedTime; 0: no
	// limit by age, only disk pressure deletes).
	Retention time.Duration
	// RetentionAt is when expired segments are deleted: a local time
	// "HH:MM" (several separated by ';'), each opening an hour-long window,
	// or "any" (default "04:00", RocketMQ's deleteWhen).
	RetentionAt string
	// DiskCleanRatio: at this disk use expired segments are deleted at
	// once, outside the window (default 0.75, diskMaxUsedSpaceRatio).
	DiskCleanRatio float64
	// DiskForceCleanRatio: at this disk use segments are deleted whatever
	// their age, oldest first (default 0.85; never above DiskFullRatio).
	DiskForceCleanRatio float64
	// DiskFullRatio: at this disk use sends are refused with
	// SERVICE_NOT_AVAILABLE until it drops below (default 0.90).
	DiskFullRatio float64
	// RetentionInterval is how often retention runs a round (default 10 s).
	RetentionInterval time.Duration
	// RetentionDeleteInterval is the pause between two segment deletions
	// (default 100 ms; negative: none).
	RetentionDeleteInterval time.Duration
	// DiskSampleInterval is how often disk use is sampled (default 1 s).
	DiskSampleInterval time.Duration
	// Clock is the retention clock: message ages and the deletion window
	// (tests; nil: time.Now). Timers keep the real clock.
	Clock func() time.Time
	// DiskUsage samples the used ratio of the data directory's disk (tests;
	// nil: statfs).
	DiskUsage func() (float64, error)
	// RetentionFault is called before each segment deletion (tests; nil in
	// production).
	RetentionFault func()
	// TimerGeometry overrides the timer wheel's shape (tests; nil: the
	// defaults). A timer store keeps the geometry it was created with.
	TimerGeometry *TimerGeometry
	// Registerer receives the broker's metrics (nil: none).
	Registerer prometheus.Registerer
	// Stages, when set, is the stage registry to spawn into (a process that
	// also runs a name server shares one, so that the per-stage metrics and
	// the health state cover both); nil: a new one on Registerer.
	Stages *stage.Registry
	// WriterBatch makes the CommitLog writer's answer batch
	// (writer.Options.NewBatch): the remoting router's, which writes each
	// connection once per drain (nil: answers written one by one).
	WriterBatch func() writer.Batch
	// RegisterCredentials sign REGISTER_BROKER and UNREGISTER_BROKER for
	// name servers that check them (empty: unsigned). The ACL that checks
	// the broker's own requests (netloop/auth.Guard) is the codec's: the
	// process hands it to the router (router.NewGuarded).
	RegisterCredentials access.Credentials
	// Replication is --replication (ReplicationNone: standalone, nothing
	// of the rest applies). See replication.go.
	Replication ReplicationMode
	// HAListen is the replication port (--ha-listen host:port), where the
	// master serves its replicas; HAAdvertise is the address published
	// for it (--ha-advertise; empty: HAListen).
	HAListen, HAAdvertise string
	// HAServerTLS and HADialTLS, when both are set, make the replication
	// stream speak TLS: the master's HA port serves with HAServerTLS, a
	// replica dials its master with HADialTLS (the process sets them when
	// --tls-mode is enforcing; nil: plaintext).
	HAServerTLS, HADialTLS *tls.Config
	// HAVerifyMaster, when set with TLS, checks the master's TLS
	// connection (its certificate) for the HA address the replica dialed
	// before anything else is exchanged; nil: the secret's proof alone.
	HAVerifyMaster func(cs tls.ConnectionState, addr string) error
	// HASecret is the group's replication secret: master and replicas
	// prove it to each other on every HA connection (actors/replication;
	// the process derives it, cmd/internal/process/hasecret.go). Empty:
	// an empty key, which authenticates nobody (loopback or --ha-insecure
	// only).
	HASecret []byte
	// MinInSyncReplicas refuses sends while the sync-state set (the master
	// included) has fewer members (--min-in-sync-replicas, default 1).
	MinInSyncReplicas int
	// Role is the broker's place in its replicated group, set by the
	// controller member (nil: standalone; in controller mode the pipeline
	// makes one, starting as a replica). The writer, dispatch, the timer
	// dequeue, the transaction checks and the metadata log follow it.
	Role *role.Holder
	// StartReplication starts the CommitLog stream on the open store
	// (actors/replication.Start) once the stages run; nil: no stream
	// (every send waits for a confirmation that never comes).
	StartReplication func(ReplicationEnv) (*Replication, error)
	// Logger is the broker's logger.
	Logger zerolog.Logger
	// SetLogLevel, when set, changes the level of the broker's logs while
	// it runs (UPDATE_BROKER_CONFIG's log-level; cmd/wheelmq sets
	// zerolog's global level, so the name server of the process follows);
	// nil: the level is fixed. The level in force at start is the higher
	// of Logger's and zerolog's global one.
	SetLogLevel func(zerolog.Level)
}

// DefaultMaxInflightPerConn is the default of Config.MaxInflightPerConn:
// far above what the official clients keep in flight on one connection
// (the Go client pipelines some 32 pulls per queue set, one parked pull per
// queue, and async sends without limit of its own).
const DefaultMaxInflightPerConn = 4096

// DefaultConfig returns the defaults of the wheelmq binary.
func DefaultConfig() Config {
	return Config{
		DataDir:               "./wheelmq-data",
		Listen:                "0.0.0.0:10911",
		BrokerName:            "broker-a",
		Cluster:               "DefaultCluster",
		MinInSyncReplicas:     1,
		Flush:                 writer.FlushAsync,
		AutoCreateTopic:       true,
		AutoCreateGroup:       true,
		TopicMessageTypeCheck: true,
		DefaultQueueNums:      8,
		MaxMessageSize:        4 << 20,
		MaxFrame:              DefaultMaxFrame,
		RegisterInterval:      30 * time.Second,
		RouteWait:             registrar.DefaultRouteWait,
		MaxInflightPerConn:    DefaultMaxInflightPerConn,
		MaxWriterBacklog:      65536,
		MaxParkedPullsPerConn: pull.DefaultMaxParkedPerConn,
		PullWorkers:           pull.DefaultReaders,
		TimerEnabled:          true,
		TimerDequeueWorkers:   timer.DefaultDequeueWorkers,
		Index:                 true,
		MaxTimerDelay:         365 * 24 * time.Hour,
		ScheduleMinInterval:   schedule.DefaultMinInterval,
		OrderlyLockExpiry:     60 * time.Second,

		TransactionTimeout:       6 * time.Second,
		TransactionCheckInterval: 60 * time.Second,
		TransactionCheckMax:      15,
		TransactionTick:          time.Second,
		Retention:                72 * time.Hour,
		RetentionAt:              "04:00",
		DiskCleanRatio:           0.75,
		DiskForceCleanRatio:      0.85,
		DiskFullRatio:            0.90,
		Logger:                   zerolog.Nop(),
	}
}

// MaxMessageSizeLimit is the largest MaxMessageSize the broker's frame
// and segment sizes allow (the rules of Validate): 64 KiB of a frame stay
// for the header and properties, and a segment holds the largest message
// with 48 KiB to spare.
func (c *Config) MaxMessageSizeLimit() int {
	limit := c.MaxFrame - 64<<10
	if c.SegmentSize != 0 {
		limit = int(min(int64(limit), c.SegmentSize-48<<10))
	}
	return limit
}

// TimerGeometry is the shape of the timer wheel (see timerwheel.Options).
type TimerGeometry struct {
	SlotMs       int64
	NearSlots    int
	FarSlotMs    int64
	CancelWindow time.Duration
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("data directory is empty"))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen address %q: %w", c.Listen, err))
	}
	if c.Advertise != "" {
		if _, err := netip.ParseAddrPort(c.Advertise); err != nil {
			errs = append(errs, fmt.Errorf("advertise address %q must be ip:port: %w", c.Advertise, err))
		}
	}
	for _, ns := range c.NameServers {
		if _, _, err := net.SplitHostPort(ns); err != nil {
			errs = append(errs, fmt.Errorf("name server %q: %w", ns, err))
		}
	}
	if c.BrokerName == "" || strings.ContainsAny(c.BrokerName, " ,:") {
		errs = append(errs, fmt.Errorf("broker name %q must be non-empty without spaces, commas or colons", c.BrokerName))
	}
	if c.Cluster == "" {
		errs = append(errs, errors.New("cluster name is empty"))
	}
	if c.Replication == ReplicationController {
		if _, _, err := net.SplitHostPort(c.HAListen); err != nil {
			errs = append(errs, fmt.Errorf("--replication controller needs --ha-listen host:port: %q: %w", c.HAListen, err))
		}
		if c.HAAdvertise != "" {
			if _, _, err := net.SplitHostPort(c.HAAdvertise); err != nil {
				errs = append(errs, fmt.Errorf("ha advertise address %q: %w", c.HAAdvertise, err))
			}
		}
		if c.MinInSyncReplicas < 1 {
			errs = append(errs, fmt.Errorf("min in-sync replicas %d must be >= 1", c.MinInSyncReplicas))
		}
	}
	if c.DefaultQueueNums <= 0 || c.DefaultQueueNums > 1024 {
		errs = append(errs, fmt.Errorf("default queue count %d must be in 1..1024", c.DefaultQueueNums))
	}
	if c.MaxMessageSize <= 0 {
		errs = append(errs, fmt.Errorf("max message size %d must be > 0", c.MaxMessageSize))
	}
	if c.MaxFrame < c.MaxMessageSize+64<<10 {
		errs = append(errs, fmt.Errorf("max frame %d must exceed max message size %d by at least 64 KiB", c.MaxFrame, c.MaxMessageSize))
	}
	if c.ScheduleMinInterval < time.Millisecond {
		errs = append(errs, fmt.Errorf("recurring timer minimum interval %s must be at least 1ms", c.ScheduleMinInterval))
	}
	if c.MaxTimerDelay <= 0 {
		errs = append(errs, fmt.Errorf("max timer delay %s must be > 0", c.MaxTimerDelay))
	}
	if c.TransactionTimeout <= 0 || c.TransactionCheckInterval <= 0 || c.TransactionTick <= 0 {
		errs = append(errs, fmt.Errorf("transaction timeout %s, check interval %s and tick %s must be > 0",
			c.TransactionTimeout, c.TransactionCheckInterval, c.TransactionTick))
	}
	if c.TransactionCheckMax <= 0 {
		errs = append(errs, fmt.Errorf("transaction check max %d must be > 0", c.TransactionCheckMax))
	}
	if c.OrderlyLockExpiry <= 0 {
		errs = append(errs, fmt.Errorf("orderly lock expiry %s must be > 0", c.OrderlyLockExpiry))
	}
	if c.MaxInflightPerConn <= 0 || c.MaxParkedPullsPerConn <= 0 {
		errs = append(errs, fmt.Errorf("max unanswered requests per connection %d and max parked pulls per connection %d must be > 0",
			c.MaxInflightPerConn, c.MaxParkedPullsPerConn))
	}
	if c.MaxConnOutput > 0 && c.MaxConnOutput < int64(c.MaxFrame) {
		errs = append(errs, fmt.Errorf("max connection output %d must hold at least one frame (%d bytes)", c.MaxConnOutput, c.MaxFrame))
	}
	if c.PullWorkers < 1 || c.PullWorkers > pull.MaxReaders {
		errs = append(errs, fmt.Errorf("pull workers %d must be in 1..%d", c.PullWorkers, pull.MaxReaders))
	}
	if c.RegisterInterval <= 0 {
		errs = append(errs, fmt.Errorf("register interval %s must be > 0", c.RegisterInterval))
	}
	if c.RouteWait <= 0 {
		errs = append(errs, fmt.Errorf("route wait %s must be > 0", c.RouteWait))
	}
	errs = append(errs, c.validateRetention()...)
	return errors.Join(errs...)
}

// validateRetention checks the retention and disk settings.
func (c *Config) validateRetention() []error {
	var errs []error
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("retention %s must be >= 0 (0: no limit by age)", c.Retention))
	}
	if _, err := retention.ParseSchedule(c.RetentionAt); err != nil {
		errs = append(errs, err)
	}
	ratio := func(name string, v float64) {
		if !(v > 0 && v <= 1) {
			errs = append(errs, fmt.Errorf("%s %v must be in (0, 1]", name, v))
		}
	}
	ratio("disk clean ratio", c.DiskCleanRatio)
	ratio("disk force-clean ratio", c.DiskForceCleanRatio)
	ratio("disk full ratio", c.DiskFullRatio)
	if c.DiskCleanRatio > c.DiskFullRatio {
		errs = append(errs, fmt.Errorf("disk clean ratio %v must not exceed the disk full ratio %v", c.DiskCleanRatio, c.DiskFullRatio))
	}
	if c.SegmentSize != 0 && c.SegmentSize < int64(c.MaxMessageSize)+48<<10 {
		errs = append(errs, fmt.Errorf("commitlog segment size %d must hold the largest message (%d bytes) with 48 KiB for its properties and header",
			c.SegmentSize, c.MaxMessageSize))
	}
	if c.RetentionInterval < 0 || c.DiskSampleInterval < 0 {
		errs = append(errs, fmt.Errorf("retention interval %s and disk sample interval %s must be >= 0 (0: default)",
			c.RetentionInterval, c.DiskSampleInterval))
	}
	return errs
}
