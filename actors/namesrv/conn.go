package namesrv

import "slices"

// DropConn removes every broker whose last registration came over the
// name-server connection conn, and returns their keys sorted by cluster,
// name and broker id; call it when that connection closes (RocketMQ's
// BrokerHousekeepingService does the same on channel close). A broker that
// re-registered over another connection since is kept: its entry is bound
// to the newer connection. conn 0 (unknown) removes nothing.
func (r *Registry) DropConn(conn uint64) []BrokerKey {
	if conn == 0 {
		return nil
	}
	var gone []BrokerKey
	for k, e := range r.brokers {
		if e.Conn == conn {
			delete(r.brokers, k)
			gone = append(gone, k)
		}
	}
	slices.SortFunc(gone, compareKeys)
	return gone
}
