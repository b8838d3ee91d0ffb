package adminbody

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/wheelmq/wheelmq/storage/lenient"
)

// MessageQueue names one queue of a topic on a broker; its JSON is
// {"brokerName":..,"queueId":..,"topic":..}.
type MessageQueue struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Topic      string `json:"topic"`
}

// compare orders queues by topic, broker name, then queue id.
func (q MessageQueue) compare(o MessageQueue) int {
	if c := cmp.Compare(q.Topic, o.Topic); c != 0 {
		return c
	}
	if c := cmp.Compare(q.BrokerName, o.BrokerName); c != 0 {
		return c
	}
	return cmp.Compare(q.QueueID, o.QueueID)
}

// appendQueueMap appends m as a fastjson map with MessageQueue keys in key
// position, entries sorted.
func appendQueueMap[V any](dst []byte, m map[MessageQueue]V) ([]byte, error) {
	keys := make([]MessageQueue, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, MessageQueue.compare)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendJSON(dst, k); err != nil {
			return nil, err
		}
		dst = append(dst, ':')
		if dst, err = appendJSON(dst, m[k]); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// appendJSON appends v as compact JSON without HTML escaping (Java does
// not escape '<', '>' or '&').
func appendJSON(dst []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("adminbody encode %T: %w", v, err)
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// Double is a Java double: it encodes with a fraction, as fastjson writes
// one ("0.0", "12.5"), and decodes from any JSON number or numeric string
// (package lenient).
type Double float64

// MarshalJSON implements json.Marshaler.
func (d Double) MarshalJSON() ([]byte, error) {
	f := float64(d)
	if f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308 {
		return []byte("0.0"), nil // NaN and infinities have no JSON form
	}
	b := strconv.AppendFloat(nil, f, 'f', -1, 64)
	if !bytes.ContainsAny(b, ".eE") {
		b = append(b, ".0"...)
	}
	return b, nil
}

// UnmarshalJSON implements json.Unmarshaler: package lenient's double
// rule (a number, or a string strconv.ParseFloat reads; null leaves d).
func (d *Double) UnmarshalJSON(b []byte) error {
	f, set, err := lenient.ParseFloat(b)
	if err != nil {
		return fmt.Errorf("adminbody: %w", err)
	}
	if set {
		*d = Double(f)
	}
	return nil
}
