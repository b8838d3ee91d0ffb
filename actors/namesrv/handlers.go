package namesrv

import (
	"fmt"
	"time"
)

// Serve serves one call at time now, over the name-server connection conn
// (0: unknown; a RegisterBroker binds the broker's entry to it, so that
// DropConn(conn) removes it when the connection closes), and returns its
// answer. It never panics on bad input; see the package doc for the calls
// served and the refusals. GetConfig is the actor's (Options.Settings):
// here it is Unsupported, as is any other type.
func (r *Registry) Serve(call Call, now time.Time, conn uint64) Answer {
	switch c := call.(type) {
	case nil:
		return Answer{Status: Failed, Remark: "namesrv: nil request"}
	case RegisterBroker:
		return r.serveRegister(c, now, conn)
	case UnregisterBroker:
		r.Unregister(c.Key, c.Addr)
		return Answer{}
	case GetRoute:
		return r.serveRoute(c.Topic)
	case GetClusterInfo:
		return Answer{Cluster: r.ClusterInfo()}
	case GetAllTopics:
		names := r.TopicNames()
		if names == nil {
			names = []string{}
		}
		return Answer{Topics: &TopicList{TopicList: names}}
	case DeleteTopic:
		r.DeleteTopic(c.Topic, c.Cluster)
		return Answer{}
	case PutKV:
		return r.servePutKV(c)
	case GetKV:
		return r.serveGetKV(c)
	case DeleteKV:
		return r.serveDeleteKV(c)
	case GetKVList:
		return r.serveKVList(c.Namespace)
	case GetSystemTopics:
		tl := r.SystemTopicList()
		return Answer{Topics: &tl}
	case GetTopicsByCluster:
		return Answer{Topics: &TopicList{TopicList: r.TopicsByCluster(c.Cluster)}}
	case WipeWritePerm:
		return Answer{TopicCount: r.WipeWritePerm(c.BrokerName)}
	case AddWritePerm:
		return Answer{TopicCount: r.AddWritePerm(c.BrokerName)}
	}
	return Answer{Status: Unsupported, Remark: fmt.Sprintf(" request type %d not supported", call.Code())}
}

// serveRegister serves REGISTER_BROKER (103): the body's checksum, then
// the body, then the master epoch; the answer carries a slave's master and
// the ORDER_TOPIC_CONFIG namespace (Java's returnOrderTopicConfigToBroker,
// on by default; nil without that namespace).
func (r *Registry) serveRegister(c RegisterBroker, now time.Time, conn uint64) Answer {
	if err := checkBodyCRC(c.Body, c.BodyCRC32); err != nil {
		return refused(err)
	}
	topics, dv, err := decodeRegisterBody(c.Body, c.Compressed)
	if err != nil {
		return refused(err)
	}
	if why := r.staleMaster(c.Info, dv.StateVersion); why != "" {
		return Answer{Status: Fenced, Remark: why}
	}
	res, err := r.register(c.Info, topics, dv, now, conn)
	if err != nil {
		return refused(err)
	}
	ans := Answer{HAServerAddr: res.HAServerAddr, MasterAddr: res.MasterAddr}
	ans.Table, _ = r.kvNamespace(NamespaceOrderTopicConfig)
	return ans
}

// serveRoute serves GET_ROUTEINFO_BY_TOPIC (105), with orderTopicConf
// from ORDER_TOPIC_CONFIG when order messages are enabled.
func (r *Registry) serveRoute(topic string) Answer {
	rd, ok := r.Route(topic)
	if !ok {
		return Answer{Status: TopicNotFound, Remark: "No topic route info in name server for the topic: " + topic}
	}
	rd.OrderTopicConf = r.orderTopicConf(topic)
	return Answer{Route: rd}
}
