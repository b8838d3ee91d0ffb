package process

import "github.com/wheelmq/wheelmq/storage/meta"

// brokerTopic tells the topics a broker makes for itself beside RocketMQ's
// fixed system topics (meta.DefaultTopics): its cluster's and its own
// name, and its cluster's reply topic.
func (cb *consoleBackend) brokerTopic(name string) bool {
	if cb.n.broker == nil {
		return false
	}
	cfg := cb.n.broker.cfg
	return name != "" && (name == cfg.Cluster || name == cfg.BrokerName || name == meta.ReplyTopic(cfg.Cluster))
}
