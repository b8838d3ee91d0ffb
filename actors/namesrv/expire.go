package namesrv

import (
	"slices"
	"time"
)

// Expire drops every broker whose last registration is more than its
// heartbeat timeout before now, and returns their keys sorted by cluster,
// name and broker id. A topic that only expired brokers served disappears from
// routes; a broker name whose master expired keeps serving routes from its
// lowest-id live slave.
func (r *Registry) Expire(now time.Time) []BrokerKey {
	var gone []BrokerKey
	for k, e := range r.brokers {
		if now.Sub(e.LastUpdate) > e.Timeout {
			delete(r.brokers, k)
			gone = append(gone, k)
		}
	}
	slices.SortFunc(gone, compareKeys)
	return gone
}
