package mqclient

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Permission bits of a queue data (RocketMQ PermName).
const (
	// PermWrite allows sends.
	PermWrite int32 = 2
	// PermRead allows pulls.
	PermRead int32 = 4
	// PermInherit lets auto-created topics copy the template's permission.
	PermInherit int32 = 1
)

// MasterID is the broker id of a master in BrokerData.BrokerAddrs.
const MasterID = "0"

// TopicRouteData is the GET_ROUTEINFO_BY_TOPIC (105) response body, reduced
// to what a client uses.
type TopicRouteData struct {
	// OrderTopicConf is "brokerName:num;..." for global order topics.
	OrderTopicConf string `json:"orderTopicConf"`
	// QueueDatas lists the topic's queues per broker.
	QueueDatas []QueueData `json:"queueDatas"`
	// BrokerDatas lists the brokers and their addresses.
	BrokerDatas []BrokerData `json:"brokerDatas"`
}

// QueueData is one broker's queues of a topic.
type QueueData struct {
	// BrokerName names the broker.
	BrokerName string `json:"brokerName"`
	// ReadQueueNums is the number of readable queues.
	ReadQueueNums int32 `json:"readQueueNums"`
	// WriteQueueNums is the number of writable queues.
	WriteQueueNums int32 `json:"writeQueueNums"`
	// Perm holds the PermRead / PermWrite / PermInherit bits.
	Perm int32 `json:"perm"`
	// TopicSysFlag is the topic's system flag.
	TopicSysFlag int32 `json:"topicSysFlag"`
}

// BrokerData is one broker name with its members' addresses.
type BrokerData struct {
	// Cluster is the broker's cluster name.
	Cluster string `json:"cluster"`
	// BrokerName names the broker.
	BrokerName string `json:"brokerName"`
	// BrokerAddrs maps broker id ("0" = master) to "host:port".
	BrokerAddrs map[string]string `json:"brokerAddrs"`
}

// Queue is one message queue: a topic's queue id on a broker.
type Queue struct {
	// Topic is the queue's topic.
	Topic string
	// Broker is the broker name.
	Broker string
	// ID is the queue id on that broker.
	ID int32
}

// String formats the queue as topic@broker#id.
func (q Queue) String() string {
	return q.Topic + "@" + q.Broker + "#" + strconv.Itoa(int(q.ID))
}

// PublishRoute is what a producer needs of a topic's route.
type PublishRoute struct {
	// Topic is the topic the route is for.
	Topic string
	// Queues are the writable queues of master brokers, by broker name then id.
	Queues []Queue
	// Brokers maps each broker name of Queues to its master address.
	Brokers map[string]string
	// Borrowed reports a route taken from TBW102 for a topic that does not
	// exist yet (the broker creates it on the first send).
	Borrowed bool
	// Data is the route as the name server sent it (TBW102's when Borrowed).
	Data *TopicRouteData
	// Masterless names the brokers (groups) that have writable queues in
	// the route but no master: replicas only, a replicated group between
	// two masters (docs/operations.md, "Replicated broker groups").
	Masterless []string
}

// ParseRoute decodes a route body. Besides standard JSON it accepts the form
// Java name servers send to old clients, with unquoted numeric keys in
// brokerAddrs ({0:"host:port"}). Failures wrap ErrBadRoute.
func ParseRoute(body []byte) (*TopicRouteData, error) {
	var r TopicRouteData
	err := json.Unmarshal(body, &r)
	if err != nil {
		if fixed, changed := quoteNumericKeys(body); changed {
			err = json.Unmarshal(fixed, &r)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("route body of %d bytes: %w: %w", len(body), ErrBadRoute, err)
	}
	return &r, nil
}

// quoteNumericKeys quotes object keys that are bare integers (fastjson's
// form of Long map keys), leaving strings and everything else untouched. It
// reports whether it changed anything.
func quoteNumericKeys(b []byte) ([]byte, bool) {
	out := make([]byte, 0, len(b)+16)
	changed := false
	inString, escaped := false, false
	expectKey := false // after '{' or ',' inside an object
	var depth []byte   // stack of '{' and '['
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString, expectKey = true, false
		case '{', '[':
			depth = append(depth, c)
			expectKey = c == '{'
		case '}', ']':
			if len(depth) > 0 {
				depth = depth[:len(depth)-1]
			}
			expectKey = false
		case ',':
			expectKey = len(depth) > 0 && depth[len(depth)-1] == '{'
		case ' ', '\t', '\n', '\r':
		default:
			if expectKey && (c == '-' || c >= '0' && c <= '9') {
				j := i
				if c == '-' {
					j++
				}
				digits := j
				for j < len(b) && b[j] >= '0' && b[j] <= '9' {
					j++
				}
				k := j
				for k < len(b) && (b[k] == ' ' || b[k] == '\t' || b[k] == '\n' || b[k] == '\r') {
					k++
				}
				if j > digits && k < len(b) && b[k] == ':' {
					out = append(out, '"')
					out = append(out, b[i:j]...)
					out = append(out, '"')
					changed = true
					i = j - 1
					expectKey = false
					continue
				}
			}
			expectKey = false
		}
		out = append(out, c)
	}
	return out, changed
}

// Publish derives the publish route of topic from r (see the package doc).
func (r *TopicRouteData) Publish(topic string) *PublishRoute {
	pr := &PublishRoute{Topic: topic, Brokers: map[string]string{}, Data: r}
	masters := make(map[string]string, len(r.BrokerDatas))
	for _, bd := range r.BrokerDatas {
		if a := bd.BrokerAddrs[MasterID]; a != "" {
			masters[bd.BrokerName] = a
		}
	}
	add := func(broker string, n int32) {
		addr, ok := masters[broker]
		if !ok {
			if r.hasBroker(broker) && !slices.Contains(pr.Masterless, broker) {
				pr.Masterless = append(pr.Masterless, broker)
			}
			return
		}
		pr.Brokers[broker] = addr
		for id := range n {
			pr.Queues = append(pr.Queues, Queue{Topic: topic, Broker: broker, ID: id})
		}
	}
	if r.OrderTopicConf != "" {
		for item := range strings.SplitSeq(r.OrderTopicConf, ";") {
			name, num, ok := strings.Cut(item, ":")
			n, err := strconv.Atoi(num)
			if ok && err == nil && n > 0 {
				add(name, int32(n))
			}
		}
		return pr
	}
	qds := slices.Clone(r.QueueDatas)
	slices.SortStableFunc(qds, func(a, b QueueData) int { return cmp.Compare(a.BrokerName, b.BrokerName) })
	for _, qd := range qds {
		if qd.Perm&PermWrite != 0 {
			add(qd.BrokerName, qd.WriteQueueNums)
		}
	}
	return pr
}

// capQueues returns a copy of r with every queue count capped at n (for a
// route borrowed from TBW102).
func (r *TopicRouteData) capQueues(n int) *TopicRouteData {
	c := *r
	c.QueueDatas = slices.Clone(r.QueueDatas)
	for i := range c.QueueDatas {
		c.QueueDatas[i].ReadQueueNums = min(c.QueueDatas[i].ReadQueueNums, int32(n))
		c.QueueDatas[i].WriteQueueNums = min(c.QueueDatas[i].WriteQueueNums, int32(n))
	}
	return &c
}

// hasBroker reports whether r lists an address (of any broker id) for
// broker.
func (r *TopicRouteData) hasBroker(broker string) bool {
	for _, bd := range r.BrokerDatas {
		if bd.BrokerName == broker && len(bd.BrokerAddrs) > 0 {
			return true
		}
	}
	return false
}

// masterAddrs returns the master addresses of r's brokers.
func (r *TopicRouteData) masterAddrs() []string {
	var out []string
	for _, bd := range r.BrokerDatas {
		if a := bd.BrokerAddrs[MasterID]; a != "" {
			out = append(out, a)
		}
	}
	return out
}

// describe summarizes r's queue datas for error messages.
func (r *TopicRouteData) describe() string {
	if len(r.QueueDatas) == 0 {
		return "no queue data"
	}
	parts := make([]string, 0, len(r.QueueDatas))
	for _, qd := range r.QueueDatas {
		parts = append(parts, fmt.Sprintf("%s perm %d write queues %d", qd.BrokerName, qd.Perm, qd.WriteQueueNums))
	}
	return strings.Join(parts, ", ")
}
