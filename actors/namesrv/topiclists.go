package namesrv

// The topic lists of the admin tools beyond GET_ALL_TOPIC_LIST:
// GET_SYSTEM_TOPIC_LIST_FROM_NS (304, rocketmq-dashboard's topic page asks
// it before every list) and GET_TOPICS_BY_CLUSTER (224), as RocketMQ's
// RouteInfoManager answers them.

import "slices"

// SystemTopicList returns the name server's part of the system topics: the
// cluster names and the broker names (each broker has a topic of its
// name), and the address of a live broker (a master where there is one) to
// ask for the rest (GET_SYSTEM_TOPIC_LIST_FROM_BROKER).
func (r *Registry) SystemTopicList() TopicList {
	ci := r.ClusterInfo()
	tl := TopicList{TopicList: []string{}}
	for cluster, names := range ci.ClusterAddrTable {
		tl.TopicList = append(tl.TopicList, cluster)
		tl.TopicList = append(tl.TopicList, names...)
	}
	slices.Sort(tl.TopicList)
	tl.TopicList = slices.Compact(tl.TopicList)
	for _, g := range r.groups() {
		tl.BrokerAddr = g[0].Addr
		break
	}
	return tl
}

// TopicsByCluster returns the topics routed to the brokers of cluster,
// sorted (empty for an unknown cluster, as RocketMQ answers).
func (r *Registry) TopicsByCluster(cluster string) []string {
	set := map[string]bool{}
	for _, g := range r.groups() {
		if g[0].Key.Cluster != cluster {
			continue
		}
		for t := range g[0].Topics {
			set[t] = true
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}
