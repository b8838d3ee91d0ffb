package producer

import (
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

	// props are the properties in the order they were first set: the
	// first inlineProps in inline, the rest in more. A message with a tag
	// and a delivery time needs no allocation beyond its own.
	inline [inlineProps]prop
	n      int // properties in inline
	more   []prop
}

// inlineProps is how many properties a Message holds without allocating.
const inlineProps = 2

// prop is one property. Timer values are kept as numbers (num, with
// isNum) and written as decimal text when the message is encoded.
type prop struct {
	key   string
	val   string
	num   int64
	isNum bool
}

// value returns the property's value as text.
func (p *prop) value() string {
	if p.isNum {
		return strconv.FormatInt(p.num, 10)
	}
	return p.val
}

// appendValue appends the property's value as text to dst.
func (p *prop) appendValue(dst []byte) []byte {
	if p.isNum {
		return strconv.AppendInt(dst, p.num, 10)
	}
	return append(dst, p.val...)
}

// valueLen returns the length of the property's value as text.
func (p *prop) valueLen() int {
	if p.isNum {
		var b [20]byte
		return len(strconv.AppendInt(b[:0], p.num, 10))
	}
	return len(p.val)
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
		m.remove(key)
		return m
	}
	m.set(prop{key: key, val: value})
	return m
}

// WithDeliverAt makes m a timer message delivered at t (property
// TIMER_DELIVER_MS, epoch milliseconds), replacing an earlier WithDelay. A
// time already past delivers at once.
func (m *Message) WithDeliverAt(t time.Time) *Message {
	m.clearTimer()
	m.set(prop{key: message.PropTimerDeliverMS, num: t.UnixMilli(), isNum: true})
	return m
}

// WithDelay makes m a timer message delivered d after the broker stores it
// (property TIMER_DELAY_MS, whole milliseconds), replacing an earlier
// WithDeliverAt. A negative d is refused at send (RuleTimer).
func (m *Message) WithDelay(d time.Duration) *Message {
	m.clearTimer()
	m.set(prop{key: message.PropTimerDelayMS, num: d.Milliseconds(), isNum: true})
	return m
}

// clearTimer removes every timer property.
func (m *Message) clearTimer() {
	m.remove(message.PropTimerDeliverMS)
	m.remove(message.PropTimerDelayMS)
	m.remove(message.PropTimerDelaySec)
}

// numProps returns how many properties m has.
func (m *Message) numProps() int { return m.n + len(m.more) }

// propAt returns the i-th property, 0 <= i < numProps.
func (m *Message) propAt(i int) *prop {
	if i < m.n {
		return &m.inline[i]
	}
	return &m.more[i-m.n]
}

// find returns the property key, or nil.
func (m *Message) find(key string) *prop {
	for i := range m.numProps() {
		if p := m.propAt(i); p.key == key {
			return p
		}
	}
	return nil
}

// set replaces the value of x.key, or adds x.
func (m *Message) set(x prop) {
	if p := m.find(x.key); p != nil {
		*p = x
		return
	}
	if m.n < inlineProps && len(m.more) == 0 {
		m.inline[m.n] = x
		m.n++
		return
	}
	m.more = append(m.more, x)
}

// remove deletes the property key, keeping the others in order.
func (m *Message) remove(key string) {
	last := m.numProps() - 1
	for i := 0; i <= last; i++ {
		if m.propAt(i).key != key {
			continue
		}
		for j := i; j < last; j++ {
			*m.propAt(j) = *m.propAt(j + 1)
		}
		if len(m.more) > 0 {
			m.more[len(m.more)-1] = prop{}
			m.more = m.more[:len(m.more)-1]
		} else {
			m.n--
			m.inline[m.n] = prop{}
		}
		return
	}
}

// Property returns the value of a property, or "".
func (m *Message) Property(key string) string {
	if p := m.find(key); p != nil {
		return p.value()
	}
	return ""
}

// Properties returns a copy of the message's properties (nil when it has
// none).
func (m *Message) Properties() map[string]string {
	if m.numProps() == 0 {
		return nil
	}
	out := make(map[string]string, m.numProps())
	for i := range m.numProps() {
		p := m.propAt(i)
		out[p.key] = p.value()
	}
	return out
}

// Tag returns the message's tag.
func (m *Message) Tag() string { return m.Property(message.PropTags) }

// Keys returns the message's business keys.
func (m *Message) Keys() []string { return strings.Fields(m.Property(message.PropKeys)) }

// IsTimer reports whether m carries a delivery time or delay.
func (m *Message) IsTimer() bool {
	for _, k := range timerProps {
		if m.find(k) != nil {
			return true
		}
	}
	return false
}

// timerProps are the properties that make a message a timer (or delay)
// message.
var timerProps = []string{message.PropTimerDeliverMS, message.PropTimerDelayMS, message.PropTimerDelaySec, message.PropDelay}
