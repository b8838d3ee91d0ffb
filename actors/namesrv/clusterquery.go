package namesrv

// ClusterQuery asks the registry what GET_BROKER_CLUSTER_INFO answers,
// typed, for a reader in the same process (the broker API's cluster view
// over an embedded name server). Reply runs on the stage's goroutine and
// must not block; the answer is the caller's.
type ClusterQuery struct {
	Reply func(*ClusterInfo)
}

// Fail implements stage.Failable: the query is answered with nothing.
func (q *ClusterQuery) Fail(error) { q.Reply(nil) }

// DeleteRoute removes a topic from every broker's table in the registry
// (DELETE_TOPIC_IN_NAMESRV without a cluster), for a caller in the same
// process. Done runs on the stage's goroutine and must not block; found
// says whether any table held the topic (false also when the stage failed
// the request).
type DeleteRoute struct {
	Topic string
	Done  func(found bool)
}

// Fail implements stage.Failable.
func (d *DeleteRoute) Fail(error) { d.Done(false) }
