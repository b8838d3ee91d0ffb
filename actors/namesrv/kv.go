package namesrv

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxOrderQueueNums caps the queue count of one broker in an
// ORDER_TOPIC_CONFIG value: the Go client makes one queue object per
// count when it reads the route.
const MaxOrderQueueNums = 65535

// UseKVConfig makes kv the registry's KV configuration; save, when not nil,
// persists every changed configuration before the request that changed it
// is answered, and a change whose save fails is not made (the request gets
// SYSTEM_ERROR). Without it the configuration lives in memory only.
func (r *Registry) UseKVConfig(kv *KVConfig, save func(*KVConfig) error) {
	if kv == nil {
		kv = NewKVConfig()
	}
	r.kv, r.saveKV = kv, save
}

// KVConfig returns the current KV configuration (immutable).
func (r *Registry) KVConfig() *KVConfig { return r.kv }

// SetOrderMessageEnable sets whether routes carry the topic's
// ORDER_TOPIC_CONFIG value as orderTopicConf (RocketMQ's
// orderMessageEnable, off by default as there).
func (r *Registry) SetOrderMessageEnable(on bool) { r.orderMessageEnable = on }

// changeKV persists next and makes it current.
func (r *Registry) changeKV(next *KVConfig) error {
	if r.saveKV != nil {
		if err := r.saveKV(next); err != nil {
			return err
		}
	}
	r.kv = next
	return nil
}

// servePutKV serves PUT_KV_CONFIG (100): storing the value already stored
// writes nothing.
func (r *Registry) servePutKV(c PutKV) Answer {
	if c.Namespace == NamespaceOrderTopicConfig {
		if err := validateOrderTopicConf(c.Value); err != nil {
			return refused(err)
		}
	}
	if old, ok := r.kv.Get(c.Namespace, c.Key); !ok || old != c.Value {
		if err := r.changeKV(r.kv.With(c.Namespace, c.Key, c.Value)); err != nil {
			return refused(err)
		}
	}
	return Answer{}
}

// serveGetKV serves GET_KV_CONFIG (101): the value, or NotFound with
// Java's remark.
func (r *Registry) serveGetKV(c GetKV) Answer {
	v, ok := r.kv.Get(c.Namespace, c.Key)
	if !ok {
		return Answer{Status: NotFound, Remark: "No config item, Namespace: " + c.Namespace + " Key: " + c.Key}
	}
	return Answer{Value: v}
}

// serveDeleteKV serves DELETE_KV_CONFIG (102): OK whether or not the key
// existed (Java too); deleting a missing key writes nothing.
func (r *Registry) serveDeleteKV(c DeleteKV) Answer {
	if next, ok := r.kv.Without(c.Namespace, c.Key); ok {
		if err := r.changeKV(next); err != nil {
			return refused(err)
		}
	}
	return Answer{}
}

// serveKVList serves GET_KVLIST_BY_NAMESPACE (219): the namespace's items,
// or NotFound with Java's remark when it does not exist.
func (r *Registry) serveKVList(namespace string) Answer {
	items, ok := r.kvNamespace(namespace)
	if !ok {
		return Answer{Status: NotFound, Remark: "No config item, Namespace: " + namespace}
	}
	return Answer{Table: items}
}

// kvNamespace returns a copy of a namespace's items, never nil when ok (an
// existing namespace is a KVTable body, {"table":{}} when empty).
func (r *Registry) kvNamespace(namespace string) (map[string]string, bool) {
	items, ok := r.kv.Namespace(namespace)
	if ok && items == nil {
		items = map[string]string{}
	}
	return items, ok
}

// orderTopicConf returns the route's orderTopicConf for topic: its
// ORDER_TOPIC_CONFIG value when order messages are enabled and the value
// is one the Go client can read (a value from a file edited by hand may
// not be), else "".
func (r *Registry) orderTopicConf(topic string) string {
	if !r.orderMessageEnable {
		return ""
	}
	v, ok := r.kv.Get(NamespaceOrderTopicConfig, topic)
	if !ok || validateOrderTopicConf(v) != nil {
		return ""
	}
	return v
}

// validateOrderTopicConf checks an ORDER_TOPIC_CONFIG value: empty (no
// order configuration), or "brokerName:queueNums" items separated by ';'
// with a non-empty broker name and a count in 1..MaxOrderQueueNums that
// both clients read (strconv.Atoi; Java's parseInt reads the same). The Go
// client indexes the part after ':' without checking it is there (a
// missing ':' or a trailing ';' panics its producer), and Java's parseInt
// throws on anything but a number.
func validateOrderTopicConf(v string) error {
	if v == "" {
		return nil
	}
	for i, item := range strings.Split(v, ";") {
		name, num, ok := strings.Cut(item, ":")
		n, err := strconv.Atoi(num)
		switch {
		case !ok || name == "":
			return fmt.Errorf("%w: %s value %q: item %d %q is not brokerName:queueNums",
				ErrInvalidValue, NamespaceOrderTopicConfig, v, i, item)
		case err != nil || n < 1 || n > MaxOrderQueueNums:
			return fmt.Errorf("%w: %s value %q: item %d %q: queue count must be a number in 1..%d",
				ErrInvalidValue, NamespaceOrderTopicConfig, v, i, item, MaxOrderQueueNums)
		}
	}
	return nil
}
