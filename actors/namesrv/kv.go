package namesrv

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Header fields of the KV requests (PutKVConfigRequestHeader,
// GetKVConfigRequestHeader, DeleteKVConfigRequestHeader,
// GetKVListByNamespaceRequestHeader; GetKVConfigResponseHeader's value).
const (
	fieldNamespace = "namespace"
	fieldKey       = "key"
	fieldValue     = "value"
)

// MaxOrderQueueNums caps the queue count of one broker in an
// ORDER_TOPIC_CONFIG value: the Go client makes one queue object per
// count when it reads the route.
const MaxOrderQueueNums = 65535

// kvTable is RocketMQ's KVTable, the body of GET_KVLIST_BY_NAMESPACE and
// of the REGISTER_BROKER response.
type kvTable struct {
	Table map[string]string `json:"table"`
}

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

// presentField returns a header field that must be present; unlike
// requiredField it may be empty (Java's @CFNotNull refuses null only).
func presentField(cmd *remoting.Command, name string) (string, error) {
	v, ok := cmd.ExtFields[name]
	if !ok {
		return "", fmt.Errorf("%w: the custom field <%s> is null", ErrMissingField, name)
	}
	return v, nil
}

// kvFields reads the namespace and key of a KV request.
func kvFields(req *remoting.Command) (namespace, key string, err error) {
	if namespace, err = presentField(req, fieldNamespace); err != nil {
		return "", "", err
	}
	if key, err = presentField(req, fieldKey); err != nil {
		return "", "", err
	}
	return namespace, key, nil
}

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

// handlePutKV serves PUT_KV_CONFIG (100): header namespace, key, value
// (all present; empty allowed). Storing the value already stored writes
// nothing.
func (r *Registry) handlePutKV(req *remoting.Command) *remoting.Command {
	namespace, key, err := kvFields(req)
	if err != nil {
		return errorResponse(req, err)
	}
	value, err := presentField(req, fieldValue)
	if err != nil {
		return errorResponse(req, err)
	}
	if namespace == NamespaceOrderTopicConfig {
		if err := validateOrderTopicConf(value); err != nil {
			return errorResponse(req, err)
		}
	}
	if old, ok := r.kv.Get(namespace, key); !ok || old != value {
		if err := r.changeKV(r.kv.With(namespace, key, value)); err != nil {
			return errorResponse(req, err)
		}
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// handleGetKV serves GET_KV_CONFIG (101): the value in response header
// value, or QUERY_NOT_FOUND with Java's remark.
func (r *Registry) handleGetKV(req *remoting.Command) *remoting.Command {
	namespace, key, err := kvFields(req)
	if err != nil {
		return errorResponse(req, err)
	}
	v, ok := r.kv.Get(namespace, key)
	if !ok {
		return remoting.NewResponse(req, remoting.QueryNotFound,
			"No config item, Namespace: "+namespace+" Key: "+key)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.SetField(fieldValue, v)
	return resp
}

// handleDeleteKV serves DELETE_KV_CONFIG (102): SUCCESS whether or not the
// key existed (Java too); deleting a missing key writes nothing.
func (r *Registry) handleDeleteKV(req *remoting.Command) *remoting.Command {
	namespace, key, err := kvFields(req)
	if err != nil {
		return errorResponse(req, err)
	}
	if next, ok := r.kv.Without(namespace, key); ok {
		if err := r.changeKV(next); err != nil {
			return errorResponse(req, err)
		}
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// handleKVList serves GET_KVLIST_BY_NAMESPACE (219): body KVTable of the
// namespace, or QUERY_NOT_FOUND with Java's remark when it does not exist.
func (r *Registry) handleKVList(req *remoting.Command) *remoting.Command {
	namespace, err := presentField(req, fieldNamespace)
	if err != nil {
		return errorResponse(req, err)
	}
	body, ok, err := r.kvListBody(namespace)
	if err != nil {
		return errorResponse(req, err)
	}
	if !ok {
		return remoting.NewResponse(req, remoting.QueryNotFound, "No config item, Namespace: "+namespace)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}

// kvListBody encodes a namespace as KVTable JSON; ok is false when the
// namespace does not exist.
func (r *Registry) kvListBody(namespace string) (body []byte, ok bool, err error) {
	items, ok := r.kv.Namespace(namespace)
	if !ok {
		return nil, false, nil
	}
	body, err = marshalCompact(kvTable{Table: items})
	return body, err == nil, err
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
