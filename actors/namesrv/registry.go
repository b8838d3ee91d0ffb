package namesrv

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/storage/meta"
)

// DefaultHeartbeatTimeout is how long a broker stays registered without a new
// registration when it does not send heartbeatTimeoutMillis (RocketMQ's
// DEFAULT_BROKER_CHANNEL_EXPIRED_TIME).
const DefaultHeartbeatTimeout = 120 * time.Second

// BrokerKey identifies one broker process in the route table.
type BrokerKey struct {
	// Cluster is the broker's cluster name.
	Cluster string
	// BrokerName names the broker; a master and its slaves share it.
	BrokerName string
	// BrokerID is 0 for the master, >0 for slaves.
	BrokerID int64
}

// String renders the key as cluster/brokerName/brokerId.
func (k BrokerKey) String() string {
	return k.Cluster + "/" + k.BrokerName + "/" + strconv.FormatInt(k.BrokerID, 10)
}

// BrokerEntry is what the registry knows about one live broker.
type BrokerEntry struct {
	// Key identifies the broker.
	Key BrokerKey
	// Addr is the broker's "host:port" for clients.
	Addr string
	// HAServerAddr is the broker's HA (replication) address, may be empty.
	HAServerAddr string
	// GRPCEndpoint is the broker's gRPC endpoint, may be empty.
	GRPCEndpoint string
	// LastUpdate is the time of the last registration.
	LastUpdate time.Time
	// Timeout is how long the entry lives after LastUpdate.
	Timeout time.Duration
	// DataVersion is the broker's topic-config version at LastUpdate.
	DataVersion DataVersion
	// Topics is the broker's topic table, keyed by topic name.
	Topics map[string]meta.TopicConfig
	// Conn identifies the name-server connection the last registration
	// came over (0: unknown, e.g. a registration not made over the
	// network). When that connection closes the entry goes at once (see
	// DropConn); a registration over a newer connection replaces it.
	Conn uint64
}

// RegisterResult is what a registration tells the broker back.
type RegisterResult struct {
	// MasterAddr is the address of broker id 0 of the same broker name, set
	// for slaves when the master is registered.
	MasterAddr string
	// HAServerAddr is that master's HA address.
	HAServerAddr string
	// New reports that the broker was not registered before.
	New bool
}

// Registry is the name server's state: the route table and the KV
// configuration (see UseKVConfig). It is not safe for concurrent use: one
// actor owns it.
//
// Routes are derived from the live entries: for each broker name the member
// with the lowest broker id (the master when it is alive) is the topic
// source, and a topic is routed to that broker name when the source's topic
// table holds it. Each registration replaces the broker's whole topic table,
// so a topic deleted in the broker disappears at its next registration.
type Registry struct {
	brokers map[BrokerKey]*BrokerEntry
	// kv is the current KV configuration; saveKV (nil: none) persists a
	// changed one before it replaces kv.
	kv     *KVConfig
	saveKV func(*KVConfig) error
	// orderMessageEnable puts ORDER_TOPIC_CONFIG values into routes.
	orderMessageEnable bool
	// wiped are the broker names whose write permission an admin wiped
	// (WIPE_WRITE_PERM_OF_BROKER), with the topic-config version of the
	// broker at that time: like RocketMQ, the wipe holds until the broker's
	// topic configuration changes or ADD_WRITE_PERM_OF_BROKER.
	wiped map[string]DataVersion
	// masterEpoch (nil: no controller) returns the master epoch the
	// embedded controller applied for a broker group.
	masterEpoch func(cluster, brokerName string) (int64, bool)
}

// SetMasterEpoch makes a brokerId-0 REGISTER_BROKER whose master epoch
// (its DataVersion.StateVersion) is older than fn's answer for its group
// refused: a deposed master cannot take the routes back. A registration
// with StateVersion 0 (a broker without replication) is not checked.
func (r *Registry) SetMasterEpoch(fn func(cluster, brokerName string) (int64, bool)) {
	r.masterEpoch = fn
}

// staleMaster reports why a brokerId-0 registration at epoch sv is stale
// ("" when it is not).
func (r *Registry) staleMaster(info BrokerInfo, sv int64) string {
	if r.masterEpoch == nil || info.BrokerID != 0 || sv <= 0 {
		return ""
	}
	applied, ok := r.masterEpoch(info.Cluster, info.BrokerName)
	if !ok || sv >= applied {
		return ""
	}
	return fmt.Sprintf("namesrv: master registration of %s (%s) at epoch %d refused: the controller's master epoch is %d",
		info.BrokerName, info.BrokerAddr, sv, applied)
}

// NewRegistry returns an empty route table with an empty KV configuration
// kept in memory only.
func NewRegistry() *Registry {
	return &Registry{brokers: make(map[BrokerKey]*BrokerEntry), kv: NewKVConfig()}
}

// Register records a broker registration made at now, replacing the broker's
// topic table with topics (copied). A broker address is one broker: another
// entry of the same cluster with the same address (a slave promoted to
// master, say) is dropped.
func (r *Registry) Register(info BrokerInfo, topics map[string]meta.TopicConfig, dv DataVersion,
	now time.Time) (RegisterResult, error) {
	return r.register(info, topics, dv, now, 0)
}

// register is Register over connection conn (0: unknown).
func (r *Registry) register(info BrokerInfo, topics map[string]meta.TopicConfig, dv DataVersion,
	now time.Time, conn uint64) (RegisterResult, error) {
	if err := validateBrokerInfo(info); err != nil {
		return RegisterResult{}, err
	}
	table, err := copyTopics(topics)
	if err != nil {
		return RegisterResult{}, err
	}
	key := BrokerKey{Cluster: info.Cluster, BrokerName: info.BrokerName, BrokerID: info.BrokerID}
	for k, e := range r.brokers {
		if k != key && k.Cluster == key.Cluster && e.Addr == info.BrokerAddr {
			delete(r.brokers, k)
		}
	}
	timeout := info.HeartbeatTimeout
	if timeout <= 0 {
		timeout = DefaultHeartbeatTimeout
	}
	_, known := r.brokers[key]
	r.brokers[key] = &BrokerEntry{
		Key:          key,
		Addr:         info.BrokerAddr,
		HAServerAddr: info.HAServerAddr,
		GRPCEndpoint: info.GRPCEndpoint,
		LastUpdate:   now,
		Timeout:      timeout,
		DataVersion:  dv,
		Topics:       table,
		Conn:         conn,
	}
	res := RegisterResult{New: !known}
	if info.BrokerID != 0 {
		for _, e := range r.brokers {
			if e.Key.BrokerName == info.BrokerName && e.Key.BrokerID == 0 {
				res.MasterAddr, res.HAServerAddr = e.Addr, e.HAServerAddr
				break
			}
		}
	}
	return res, nil
}

// Unregister removes the broker key. When addr is not empty the entry is
// removed only if it still has that address (a late unregister of an old
// process must not drop its successor). It reports whether an entry went.
func (r *Registry) Unregister(key BrokerKey, addr string) bool {
	e, ok := r.brokers[key]
	if !ok || (addr != "" && e.Addr != addr) {
		return false
	}
	delete(r.brokers, key)
	return true
}

// Contains reports whether the broker key is registered.
func (r *Registry) Contains(key BrokerKey) bool {
	_, ok := r.brokers[key]
	return ok
}

// Len returns the number of registered brokers.
func (r *Registry) Len() int { return len(r.brokers) }

// Brokers returns copies of all entries, sorted by cluster, name and id.
func (r *Registry) Brokers() []BrokerEntry {
	out := make([]BrokerEntry, 0, len(r.brokers))
	for _, e := range r.brokers {
		c := *e
		c.Topics = maps.Clone(e.Topics)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b BrokerEntry) int { return compareKeys(a.Key, b.Key) })
	return out
}

// Route returns the topic's route, or false when no live broker serves it.
func (r *Registry) Route(topic string) (*TopicRouteData, bool) {
	rd := &TopicRouteData{FilterServerTable: map[string][]string{}}
	for _, g := range r.groups() {
		tc, ok := g[0].Topics[topic]
		if !ok {
			continue
		}
		rd.QueueDatas = append(rd.QueueDatas, QueueData{
			BrokerName:     g[0].Key.BrokerName,
			Perm:           r.perm(g[0], tc.Perm),
			ReadQueueNums:  tc.ReadQueueNums,
			TopicSysFlag:   tc.TopicSysFlag,
			WriteQueueNums: tc.WriteQueueNums,
		})
		rd.BrokerDatas = append(rd.BrokerDatas, brokerData(g))
	}
	if len(rd.QueueDatas) == 0 {
		return nil, false
	}
	return rd, true
}

// ClusterInfo returns every broker name with its addresses, and every
// cluster with its broker names.
func (r *Registry) ClusterInfo() *ClusterInfo {
	ci := &ClusterInfo{BrokerAddrTable: map[string]BrokerData{}, ClusterAddrTable: map[string][]string{}}
	for _, g := range r.groups() {
		ci.BrokerAddrTable[g[0].Key.BrokerName] = brokerData(g)
	}
	for k := range r.brokers {
		names := ci.ClusterAddrTable[k.Cluster]
		if !slices.Contains(names, k.BrokerName) {
			ci.ClusterAddrTable[k.Cluster] = append(names, k.BrokerName)
		}
	}
	for _, names := range ci.ClusterAddrTable {
		slices.Sort(names)
	}
	return ci
}

// TopicNames returns every routed topic, sorted.
func (r *Registry) TopicNames() []string {
	set := map[string]struct{}{}
	for _, g := range r.groups() {
		for t := range g[0].Topics {
			set[t] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// DeleteTopic removes the topic from the tables of every broker in cluster
// (every broker when cluster is empty). It reports whether any table held
// it. A broker that still has the topic publishes it again at its next
// registration.
func (r *Registry) DeleteTopic(topic, cluster string) bool {
	found := false
	for k, e := range r.brokers {
		if cluster != "" && k.Cluster != cluster {
			continue
		}
		if _, ok := e.Topics[topic]; ok {
			delete(e.Topics, topic)
			found = true
		}
	}
	return found
}

// groups returns the live entries grouped by broker name, groups sorted by
// name and members by broker id (so g[0] is the topic source).
func (r *Registry) groups() [][]*BrokerEntry {
	byName := map[string][]*BrokerEntry{}
	for _, e := range r.brokers {
		byName[e.Key.BrokerName] = append(byName[e.Key.BrokerName], e)
	}
	out := make([][]*BrokerEntry, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		g := byName[name]
		slices.SortFunc(g, func(a, b *BrokerEntry) int {
			return cmp.Or(cmp.Compare(a.Key.BrokerID, b.Key.BrokerID), cmp.Compare(a.Key.Cluster, b.Key.Cluster))
		})
		out = append(out, g)
	}
	return out
}

// brokerData builds the BrokerData of one group.
func brokerData(g []*BrokerEntry) BrokerData {
	bd := BrokerData{
		BrokerAddrs: make(map[int64]string, len(g)),
		BrokerName:  g[0].Key.BrokerName,
		Cluster:     g[0].Key.Cluster,
	}
	for _, e := range g {
		if _, dup := bd.BrokerAddrs[e.Key.BrokerID]; !dup {
			bd.BrokerAddrs[e.Key.BrokerID] = e.Addr
			if e.GRPCEndpoint != "" {
				if bd.GRPCEndpoints == nil {
					bd.GRPCEndpoints = map[int64]string{}
				}
				bd.GRPCEndpoints[e.Key.BrokerID] = e.GRPCEndpoint
			}
		}
	}
	return bd
}

// compareKeys orders keys by cluster, then name, then broker id.
func compareKeys(a, b BrokerKey) int {
	return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.BrokerName, b.BrokerName),
		cmp.Compare(a.BrokerID, b.BrokerID))
}

// validateBrokerInfo checks the identity fields of a registration.
func validateBrokerInfo(info BrokerInfo) error {
	switch {
	case info.Cluster == "":
		return fmt.Errorf("%w: clusterName", ErrMissingField)
	case info.BrokerName == "":
		return fmt.Errorf("%w: brokerName", ErrMissingField)
	case info.BrokerAddr == "":
		return fmt.Errorf("%w: brokerAddr", ErrMissingField)
	case info.BrokerID < 0:
		return fmt.Errorf("%w: brokerId %d is negative", ErrInvalidValue, info.BrokerID)
	}
	if err := validateAddr("brokerAddr", info.BrokerAddr); err != nil {
		return err
	}
	if err := validateAddr("grpcEndpoint", info.GRPCEndpoint); err != nil {
		return err
	}
	return validateAddr("haServerAddr", info.HAServerAddr)
}

// validateAddr refuses addresses that the Go client's brokerAddrs parser
// (split on ',' and strip '"') or a JSON string would mangle.
func validateAddr(field, addr string) error {
	if i := strings.IndexFunc(addr, func(c rune) bool {
		return c == ',' || c == '"' || c == '\\' || c <= ' ' || c == 0x7f
	}); i >= 0 {
		return fmt.Errorf("%w: %s %q has a forbidden character at %d", ErrInvalidValue, field, addr, i)
	}
	return nil
}

// copyTopics validates a topic table and copies it keyed by topic name.
func copyTopics(topics map[string]meta.TopicConfig) (map[string]meta.TopicConfig, error) {
	out := make(map[string]meta.TopicConfig, len(topics))
	for _, key := range slices.Sorted(maps.Keys(topics)) {
		tc := topics[key]
		if tc.TopicName == "" {
			tc.TopicName = key
		}
		switch {
		case tc.TopicName == "":
			return nil, fmt.Errorf("%w: topic config with an empty name", ErrInvalidValue)
		case tc.ReadQueueNums < 0 || tc.WriteQueueNums < 0:
			return nil, fmt.Errorf("%w: topic %s has negative queue numbers %d/%d",
				ErrInvalidValue, tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums)
		}
		if _, dup := out[tc.TopicName]; dup && key != tc.TopicName {
			continue // the entry keyed by its own name wins
		}
		out[tc.TopicName] = tc
	}
	return out, nil
}
