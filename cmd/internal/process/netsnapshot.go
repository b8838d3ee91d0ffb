package process

import "github.com/wheelmq/wheelmq/netloop"

// connections is the open remoting connections of every server of the
// process, broker and name server (wheelmq_net_connections summed over
// its server label).
func (c *netCollector) connections() int64 {
	c.mu.Lock()
	servers := append([]*netloop.Server(nil), c.servers...)
	c.mu.Unlock()
	var n int64
	for _, s := range servers {
		n += s.Stats().Conns
	}
	return n
}
