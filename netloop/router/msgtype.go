package router

// The message type rule is the broker API's (actors/broker msgtype.go);
// the hot path asks it whether a plain send may skip the general path.

import "github.com/wheelmq/wheelmq/storage/meta"

// fastTypeOK reports whether the hot path may store a plain send to cfg
// (broker.PlainTypeOK); anything else goes to the general path.
func (r *Router) fastTypeOK(cfg meta.TopicConfig, props []byte) bool {
	return r.core.PlainTypeOK(cfg, props)
}
