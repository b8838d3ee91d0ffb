package adminbody

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// OffsetWrapper is one queue of a ConsumeStats (GET_CONSUME_STATS).
type OffsetWrapper struct {
	// BrokerOffset is the queue's max offset (next offset to be written).
	BrokerOffset int64 `json:"brokerOffset"`
	// ConsumerOffset is the group's committed offset (0 when none).
	ConsumerOffset int64 `json:"consumerOffset"`
	// LastTimestamp is the store time of the last consumed message (the
	// one at ConsumerOffset-1), 0 when none.
	LastTimestamp int64 `json:"lastTimestamp"`
	// PullOffset is where the group pulls next (at least ConsumerOffset).
	PullOffset int64 `json:"pullOffset"`
}

// ConsumeStats is the GET_CONSUME_STATS (208) body.
type ConsumeStats struct {
	// ConsumeTps is the group's messages pulled per second, summed over
	// its topics.
	ConsumeTps Double
	// OffsetTable holds every read queue of the group's topics.
	OffsetTable map[MessageQueue]OffsetWrapper
}

// Lag is the sum over queues of BrokerOffset - ConsumerOffset (RocketMQ's
// computeTotalDiff).
func (c ConsumeStats) Lag() int64 {
	var n int64
	for _, w := range c.OffsetTable {
		n += w.BrokerOffset - w.ConsumerOffset
	}
	return n
}

// Encode renders c in fastjson's form.
func (c ConsumeStats) Encode() ([]byte, error) {
	b, err := appendJSON([]byte(`{"consumeTps":`), c.ConsumeTps)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"offsetTable":`...)
	if b, err = appendQueueMap(b, c.OffsetTable); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// DecodeConsumeStats reads a ConsumeStats body as Java's admin tools do.
func DecodeConsumeStats(body []byte) (ConsumeStats, error) {
	var c ConsumeStats
	m, err := topMembers(body)
	if err != nil {
		return c, fmt.Errorf("consume stats: %w", err)
	}
	if raw, ok := m["consumeTps"]; ok {
		if err := json.Unmarshal(raw, &c.ConsumeTps); err != nil {
			return c, fmt.Errorf("consume stats: consumeTps: %w", err)
		}
	}
	if c.OffsetTable, err = DecodeQueueMap[OffsetWrapper](m["offsetTable"]); err != nil {
		return c, fmt.Errorf("consume stats: offsetTable: %w", err)
	}
	return c, nil
}

// TopicOffset is one queue of a TopicStatsTable (GET_TOPIC_STATS_INFO).
type TopicOffset struct {
	// LastUpdateTimestamp is the store time of the queue's last message
	// (0 when empty).
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
	// MaxOffset is the next offset to be written.
	MaxOffset int64 `json:"maxOffset"`
	// MinOffset is the oldest offset kept.
	MinOffset int64 `json:"minOffset"`
}

// TopicStatsTable is the GET_TOPIC_STATS_INFO (202) body.
type TopicStatsTable struct {
	// OffsetTable holds every queue of the topic.
	OffsetTable map[MessageQueue]TopicOffset
	// TopicPutTps is the topic's messages stored per second.
	TopicPutTps Double
}

// Encode renders t in fastjson's form.
func (t TopicStatsTable) Encode() ([]byte, error) {
	b, err := appendQueueMap([]byte(`{"offsetTable":`), t.OffsetTable)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"topicPutTps":`...)
	if b, err = appendJSON(b, t.TopicPutTps); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// DecodeTopicStatsTable reads a TopicStatsTable body as Java's admin tools
// do.
func DecodeTopicStatsTable(body []byte) (TopicStatsTable, error) {
	var t TopicStatsTable
	m, err := topMembers(body)
	if err != nil {
		return t, fmt.Errorf("topic stats: %w", err)
	}
	if raw, ok := m["topicPutTps"]; ok {
		if err := json.Unmarshal(raw, &t.TopicPutTps); err != nil {
			return t, fmt.Errorf("topic stats: topicPutTps: %w", err)
		}
	}
	if t.OffsetTable, err = DecodeQueueMap[TopicOffset](m["offsetTable"]); err != nil {
		return t, fmt.Errorf("topic stats: offsetTable: %w", err)
	}
	return t, nil
}

// ResetOffsetBody is the body of INVOKE_BROKER_TO_RESET_OFFSET's answer
// and of RESET_CONSUMER_CLIENT_OFFSET: each queue's new offset.
type ResetOffsetBody struct {
	OffsetTable map[MessageQueue]int64
}

// Encode renders r in fastjson's form, the one the Go client's parser of
// RESET_CONSUMER_CLIENT_OFFSET needs.
func (r ResetOffsetBody) Encode() ([]byte, error) {
	b, err := appendQueueMap([]byte(`{"offsetTable":`), r.OffsetTable)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// DecodeResetOffsetBody reads a ResetOffsetBody.
func DecodeResetOffsetBody(body []byte) (ResetOffsetBody, error) {
	var r ResetOffsetBody
	m, err := topMembers(body)
	if err != nil {
		return r, fmt.Errorf("reset offset body: %w", err)
	}
	if r.OffsetTable, err = DecodeQueueMap[int64](m["offsetTable"]); err != nil {
		return r, fmt.Errorf("reset offset body: offsetTable: %w", err)
	}
	return r, nil
}

// KVTable is a string table ({"table":{...}}), the GET_BROKER_RUNTIME_INFO
// (28) body. Keys are written sorted.
type KVTable struct {
	Table map[string]string `json:"table"`
}

// Encode renders the table (encoding/json sorts map keys).
func (t KVTable) Encode() ([]byte, error) {
	if t.Table == nil {
		t.Table = map[string]string{}
	}
	return appendJSON(nil, t)
}

// DecodeKVTable reads a KVTable body.
func DecodeKVTable(body []byte) (KVTable, error) {
	var t KVTable
	if err := json.Unmarshal(body, &t); err != nil {
		return t, fmt.Errorf("kv table: %w", err)
	}
	return t, nil
}

// GroupConsumeStats is one group's entry of a ConsumeStatsList: its
// ConsumeStats, one per topic.
type GroupConsumeStats struct {
	Group string
	Stats []ConsumeStats
}

// ConsumeStatsList is the GET_BROKER_CONSUME_STATS (317) body
// (mqadmin brokerConsumeStats): every group's ConsumeStats of the broker
// and the total lag.
type ConsumeStatsList struct {
	BrokerAddr        string
	ConsumeStatsList  []GroupConsumeStats
	TotalDiff         int64
	TotalInflightDiff int64
}

// Encode renders l as fastjson does: fields in name order, each list item
// a one-key object {group: [ConsumeStats...]}.
func (l ConsumeStatsList) Encode() ([]byte, error) {
	b, err := appendJSON([]byte(`{"brokerAddr":`), l.BrokerAddr)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"consumeStatsList":[`...)
	for i, g := range l.ConsumeStatsList {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendJSON(append(b, '{'), g.Group); err != nil {
			return nil, err
		}
		b = append(b, ":["...)
		for j, cs := range g.Stats {
			if j > 0 {
				b = append(b, ',')
			}
			enc, err := cs.Encode()
			if err != nil {
				return nil, err
			}
			b = append(b, enc...)
		}
		b = append(b, "]}"...)
	}
	b = append(b, `],"totalDiff":`...)
	b = strconv.AppendInt(b, l.TotalDiff, 10)
	b = append(b, `,"totalInflightDiff":`...)
	b = strconv.AppendInt(b, l.TotalInflightDiff, 10)
	return append(b, '}'), nil
}

// DecodeConsumeStatsList reads a ConsumeStatsList body as Java's admin
// tools do.
func DecodeConsumeStatsList(body []byte) (ConsumeStatsList, error) {
	var l ConsumeStatsList
	m, err := topMembers(body)
	if err != nil {
		return l, err
	}
	for name, dst := range map[string]any{"brokerAddr": &l.BrokerAddr, "totalDiff": &l.TotalDiff, "totalInflightDiff": &l.TotalInflightDiff} {
		if raw, ok := m[name]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return l, fmt.Errorf("adminbody: %s: %w", name, err)
			}
		}
	}
	items, err := elements(m["consumeStatsList"])
	if err != nil {
		return l, fmt.Errorf("adminbody: consumeStatsList: %w", err)
	}
	for _, it := range items {
		s := scanner{b: it}
		ms, err := s.members(1)
		if err != nil {
			return l, fmt.Errorf("adminbody: consumeStatsList item: %w", err)
		}
		for _, gm := range ms {
			var g GroupConsumeStats
			if err := json.Unmarshal(gm.key, &g.Group); err != nil {
				return l, fmt.Errorf("adminbody: consumeStatsList group: %w", err)
			}
			stats, err := elements(gm.val)
			if err != nil {
				return l, fmt.Errorf("adminbody: consumeStatsList of %s: %w", g.Group, err)
			}
			for _, raw := range stats {
				cs, err := DecodeConsumeStats(raw)
				if err != nil {
					return l, err
				}
				g.Stats = append(g.Stats, cs)
			}
			l.ConsumeStatsList = append(l.ConsumeStatsList, g)
		}
	}
	return l, nil
}

// elements splits a JSON-like array into its values' texts (nil or null:
// none).
func elements(raw []byte) ([][]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	s := scanner{b: raw}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return nil, fmt.Errorf("%w: want an array", errSyntax)
	}
	s.i++
	var out [][]byte
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		return out, nil
	}
	for {
		v, err := s.value(1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		s.ws()
		if s.i >= len(s.b) {
			return nil, fmt.Errorf("%w: unterminated array", errSyntax)
		}
		s.i++
		switch s.b[s.i-1] {
		case ']':
			return out, nil
		case ',':
		default:
			return nil, fmt.Errorf("%w: want , or ] at %d", errSyntax, s.i-1)
		}
	}
}
