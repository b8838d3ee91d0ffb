package producer

import (
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/storage/message"
)

// Message is one message to send. Build it with NewMessage and the With
// methods; a Message must not be changed while a send of it is under way.
type Message struct {
	// Topic is the destination topic.
	Topic string
	// Body is the payload, 1 byte to the producer's MaxMessageSize.
	Body []byte
	// Flag is the user flag stored with the message.
	Flag int32

	props map[string]string
}

// NewMessage returns a message of body to topic.
func NewMessage(topic string, body []byte) *Message {
	return &Message{Topic: topic, Body: body}
}

// WithTag sets the message's tag (property TAGS), which consumers filter on.
func (m *Message) WithTag(tag string) *Message { return m.WithProperty(message.PropTags, tag) }

// WithKeys sets the message's business keys (property KEYS,
// space-separated), which the broker indexes.
func (m *Message) WithKeys(keys ...string) *Message {
	return m.WithProperty(message.PropKeys, strings.Join(keys, " "))
}

// WithShardingKey sets the key the HashByKey selector hashes (property
// __SHARDINGKEY).
func (m *Message) WithShardingKey(key string) *Message {
	return m.WithProperty(message.PropShardingKey, key)
}

// WithProperty sets a user property. An empty value removes it. Keys and
// values must not contain the bytes 0x01 and 0x02 (checked at send).
func (m *Message) WithProperty(key, value string) *Message {
	if value == "" {
		delete(m.props, key)
		return m
	}
	if m.props == nil {
		m.props = make(map[string]string, 4)
	}
	m.props[key] = value
	return m
}

// WithDeliverAt makes m a timer message delivered at t (property
// TIMER_DELIVER_MS, epoch milliseconds), replacing an earlier WithDelay. A
// time already past delivers at once.
func (m *Message) WithDeliverAt(t time.Time) *Message {
	m.clearTimer()
	return m.WithProperty(message.PropTimerDeliverMS, strconv.FormatInt(t.UnixMilli(), 10))
}

// WithDelay makes m a timer message delivered d after the broker stores it
// (property TIMER_DELAY_MS, whole milliseconds), replacing an earlier
// WithDeliverAt. A negative d is refused at send (RuleTimer).
func (m *Message) WithDelay(d time.Duration) *Message {
	m.clearTimer()
	return m.WithProperty(message.PropTimerDelayMS, strconv.FormatInt(d.Milliseconds(), 10))
}

// clearTimer removes every timer property.
func (m *Message) clearTimer() {
	delete(m.props, message.PropTimerDeliverMS)
	delete(m.props, message.PropTimerDelayMS)
	delete(m.props, message.PropTimerDelaySec)
}

// Property returns the value of a property, or "".
func (m *Message) Property(key string) string { return m.props[key] }

// Properties returns a copy of the message's properties.
func (m *Message) Properties() map[string]string { return maps.Clone(m.props) }

// Tag returns the message's tag.
func (m *Message) Tag() string { return m.props[message.PropTags] }

// Keys returns the message's business keys.
func (m *Message) Keys() []string { return strings.Fields(m.props[message.PropKeys]) }

// IsTimer reports whether m carries a delivery time or delay.
func (m *Message) IsTimer() bool {
	for _, k := range timerProps {
		if _, ok := m.props[k]; ok {
			return true
		}
	}
	return false
}

// timerProps are the properties that make a message a timer (or delay)
// message.
var timerProps = []string{message.PropTimerDeliverMS, message.PropTimerDelayMS, message.PropTimerDelaySec, message.PropDelay}
