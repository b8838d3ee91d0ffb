package broker

import "github.com/wheelmq/wheelmq/storage/meta"

// Group answers group's subscription configuration and true, or RocketMQ's
// defaults for a group the broker does not know (retries:
// meta.DefaultRetryMaxTimes, concurrent) and false. It reads the published
// group table: it never blocks.
func (b *Broker) Group(_ Caller, group string) (meta.SubscriptionGroupConfig, bool) {
	if group != "" {
		if g, ok := b.p.Groups().Get(group); ok {
			return g, true
		}
	}
	return meta.SubscriptionGroupConfig{GroupName: group, RetryMaxTimes: meta.DefaultRetryMaxTimes,
		ConsumeEnable: true}, false
}
