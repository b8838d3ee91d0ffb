package namesrv

// WIPE_WRITE_PERM_OF_BROKER (205) and ADD_WRITE_PERM_OF_BROKER (327):
// mqadmin wipeWritePerm / addWritePerm, the way to drain a broker before
// taking it out (producers stop sending to it, consumers go on reading), as
// RocketMQ's RouteInfoManager.operateWritePermOfBroker does it: the routes
// of every topic of the broker name lose the write bit. The wipe is the
// name server's alone, kept in memory: it holds across the broker's
// periodic registrations until its topic configuration changes (a new
// DataVersion, RocketMQ's rule) or an ADD_WRITE_PERM_OF_BROKER lifts it.

import "github.com/wheelmq/wheelmq/storage/meta"

// perm is the permission a route shows for a topic of the group whose
// topic source is e.
func (r *Registry) perm(e *BrokerEntry, perm int32) int32 {
	if v, ok := r.wiped[e.Key.BrokerName]; ok && v == e.DataVersion {
		return perm &^ meta.PermWrite
	}
	return perm
}

// WipeWritePerm takes the write permission off every topic route of
// brokerName and returns how many topics that touched.
func (r *Registry) WipeWritePerm(brokerName string) int {
	n := 0
	for _, g := range r.groups() {
		if g[0].Key.BrokerName != brokerName {
			continue
		}
		if r.wiped == nil {
			r.wiped = map[string]DataVersion{}
		}
		r.wiped[brokerName] = g[0].DataVersion
		n = len(g[0].Topics)
	}
	return n
}

// AddWritePerm lifts a wipe of brokerName and returns how many topics its
// routes hold.
func (r *Registry) AddWritePerm(brokerName string) int {
	delete(r.wiped, brokerName)
	for _, g := range r.groups() {
		if g[0].Key.BrokerName == brokerName {
			return len(g[0].Topics)
		}
	}
	return 0
}
