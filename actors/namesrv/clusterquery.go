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
