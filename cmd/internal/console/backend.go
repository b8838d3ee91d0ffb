package console

import (
	"context"
	"errors"
	"time"
)

// Backend is what the console knows of the broker. The process implements
// it by asking its stages: the admin requests of its own broker port
// (signed with the logged-in account's credentials, so the broker's ACL
// decides each one), the stages' and counters' typed snapshots (the
// numbers /metrics exports, never its output) and the timer wheel's slot
// counts. Nothing here touches a store. Every method may be called from
// many requests at once.
type Backend interface {
	AccessBackend // access.go
	ConfigBackend // config.go
	OperatorBackend
	TimerBackend
	LiteBackend // lite.go
	// ACL reports whether access control is on (then every page needs a
	// login).
	ACL() bool
	// Authenticate checks an access key and secret; ErrBadLogin when
	// either is wrong.
	Authenticate(ctx context.Context, c Credentials) (Identity, error)
	// Overview is the broker at a glance.
	Overview(ctx context.Context) (Overview, error)
	// Stages are the actor stages' figures (cumulative; the console turns
	// them into rates).
	Stages(ctx context.Context) ([]Stage, error)
	// Topics lists the broker's topics.
	Topics(ctx context.Context, c Credentials) ([]Topic, error)
	// TopicQueues is one topic's queues with their offsets.
	TopicQueues(ctx context.Context, c Credentials, topic string) ([]Queue, error)
	// CreateTopic creates or updates a topic (admin).
	CreateTopic(ctx context.Context, c Credentials, t Topic) error
	// DeleteTopic deletes a topic (admin).
	DeleteTopic(ctx context.Context, c Credentials, topic string) error
	// Groups lists the subscription groups.
	Groups(ctx context.Context, c Credentials) ([]Group, error)
	// GroupDetail is one group's consumers and progress.
	GroupDetail(ctx context.Context, c Credentials, group string) (GroupDetail, error)
	// ResetGroup moves a group's offsets on topic to the first message
	// stored at or after at (admin).
	ResetGroup(ctx context.Context, c Credentials, group, topic string, at time.Time) error
	// FindMessages looks messages up by id, key or queue offset.
	FindMessages(ctx context.Context, c Credentials, q MessageQuery) ([]Message, error)
	// Timers is the timer wheel's picture: pending counts by how far ahead
	// they are due (edges in ms from now), lateness, largest delays.
	Timers(ctx context.Context, edges []int64) (Timers, error)
	// CancelTimer cancels a pending timer by its offset message id (admin).
	CancelTimer(ctx context.Context, c Credentials, topic, offsetMsgID string) error
	// Cluster is the brokers and name servers this broker knows.
	Cluster(ctx context.Context, c Credentials) (Cluster, error)
	RatesBackend // rates.go
}

// ErrBadLogin refuses a login: unknown access key or wrong secret.
var ErrBadLogin = errors.New("console: wrong access key or secret")

// Credentials are the logged-in account's (the zero value without ACL).
// The secret stays in the server's memory, never in a cookie.
type Credentials struct {
	AccessKey, SecretKey string
}

// Identity is what a login may do.
type Identity struct {
	Name  string
	Admin bool // may change things
	Read  bool // may look (SUB or admin)
}

// Overview is the broker at a glance.
type Overview struct {
	Version, BrokerName, Cluster, Addr string
	Role                               string // "standalone", "master", "replica"
	Epoch                              int64  // replication epoch (0: none)
	Started                            time.Time
	Healthy                            bool
	Down                               []string // stages stopped for good, with the cause
	MsgsIn, MsgsOut                    float64  // cumulative (the console makes rates)
	DiskUsed                           float64  // ratio of the disk used
	DiskWarn, DiskFull                 float64  // the watermarks (ratios)
	CommitLogBytes                     float64
	TimersPending                      float64 // client timer messages (POP deadlines apart)
	PopPending                         float64 // POP invisibility deadlines waiting on the wheel
	Connections                        float64
}

// Stage is one actor stage's figures.
type Stage struct {
	Name      string
	Depth     float64 // mailbox depth
	Messages  float64 // processed, cumulative
	Seconds   float64 // processing time, cumulative
	Restarts  float64
	Up        bool
	P99       float64 // processing time p99 (seconds)
	ReadAt    time.Time
	RatePerS  float64 // filled by the console
	BusyRatio float64 // filled by the console
}

// Topic is one topic's configuration.
type Topic struct {
	Name                    string
	ReadQueues, WriteQueues int
	Perm                    int
	Order                   bool
	System                  bool
	Attributes              map[string]string
	Messages                int64 // messages stored in its queues now (sum of max - min offsets)
	PendingTimers           int64 // pending timer messages (POP deadlines apart)
}

// Queue is one queue's offsets.
type Queue struct {
	Broker       string
	ID           int
	Min, Max     int64
	LastUpdateMs int64
}

// Group is one subscription group.
type Group struct {
	Name          string
	ConsumeEnable bool
	// Broadcast is the configuration flag consumeBroadcastEnable (the
	// group may consume in broadcasting mode); Model is what its online
	// consumers do, from their heartbeats: "CLUSTERING", "BROADCASTING", or
	// "" when none is online.
	Broadcast bool
	Model     string
	Orderly   bool
	RetryMax  int
	// System marks RocketMQ's built-in groups (TOOLS_CONSUMER,
	// CID_RMQ_SYS_TRANS, ...).
	System bool
}

// GroupDetail is one group's consumers and progress.
type GroupDetail struct {
	Group       Group
	Clients     []Client
	ConsumeType string
	Model       string
	Topics      []string
	Tps         float64
	Queues      []QueueLag
}

// Client is one connected consumer.
type Client struct {
	ID, Addr, Language string
	Version            int
}

// QueueLag is one queue's consume progress.
type QueueLag struct {
	Topic, Broker   string
	ID              int
	BrokerOffset    int64
	ConsumerOffset  int64
	Lag             int64
	LastTimestampMs int64
}

// MessageQuery finds messages: by ID (offset message id or UNIQ_KEY), by
// Key within Topic, or by Topic, Queue and Offset.
type MessageQuery struct {
	ID, Topic, Key string
	Queue          int
	Offset         int64
	ByOffset       bool
}

// Message is one stored message and what became of it.
type Message struct {
	Topic, Broker, MsgID, OffsetMsgID string
	Queue                             int
	QueueOffset, CommitLogOffset      int64
	BornAt, StoredAt                  time.Time
	Properties                        map[string]string
	Body                              []byte
	TimerPending                      bool // a timer not yet due, not cancelled: it may be cancelled
	Life                              []Event
}

// Event is one step of a message's life.
type Event struct {
	At   time.Time // zero: unknown
	What string    // "stored", "dispatched", "timer due", "written back", "cancelled", "consumed by g", ...
	Note string
}

// Timers is the timer wheel's picture.
type Timers struct {
	// Pending and Counts are client timer messages: POP invisibility
	// deadlines (timers on the same wheel) are taken out and counted in
	// PopPending. PendingExact is false when there were more pending
	// timers than one count examines (then the POP share is a lower
	// bound).
	Pending       int64
	PopPending    int64
	PendingExact  bool
	DueNextMinute int64
	Counts        []int64 // by the asked edges: len(edges)+1
	LatenessP50   float64 // seconds, from the lateness histogram
	LatenessP99   float64
	LatenessMax   float64 // upper bound of the highest non-empty bucket
	LatenessOver  string  // the deliveries they cover ("since the start", "the last 2m0s")
	Delivered     float64 // timer messages written back (POP deadlines not counted)
	Cancelled     float64
	PopDeadlines  float64 // POP invisibility deadlines the wheel reached
	Furthest      []Delay // the largest delays, furthest first
}

// Delay is a slot of far-off timers: how many are due from At.
type Delay struct {
	At    time.Time
	Count int64
}

// Cluster is what the name servers know, and this broker's replication
// state once replication exists (Role, Epoch, SyncSet: see
// Overview.Role).
type Cluster struct {
	NameServers []string
	Brokers     []Broker
}

// Broker is one broker of the cluster.
type Broker struct {
	Cluster, Name, Addr string
	ID                  int64 // 0: master
	Role                string
	Epoch               int64
	SyncSet             []string
	Version             string
	Error               string // why its figures are missing
}
