package producer

// The send request. Single messages go as SEND_MESSAGE_V2 (310) and batches
// as SEND_BATCH_MESSAGE (320), both with RocketMQ's short V2 header keys:
//
//	a producerGroup   b topic          c defaultTopic ("TBW102")
//	d defaultTopicQueueNums            e queueId      f sysFlag
//	g bornTimestamp   h flag           i properties   j reconsumeTimes ("0")
//	k unitMode ("false")               m batch        n brokerName
//
// Properties are the message's own plus UNIQ_KEY (the client message id,
// kept if the caller set one) and WAIT=true. A body of at least the
// compression threshold is zlib-compressed when that makes it smaller, and
// the sysFlag gets COMPRESSED (0x1) and the ZLIB compression type (0x300),
// as Java 5 producers send it. A batch body is the concatenation of
// per-message records (message.EncodeBatch); batches are not compressed,
// because the broker applies one sysFlag to every message of a batch.

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/netloop/mqclient"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// prepared is a validated send, ready to be encoded for any queue.
type prepared struct {
	topic   string
	body    []byte // compressed, or a batch body
	sysFlag int32
	flag    int32
	props   string   // encoded properties (single messages)
	uniq    []string // UNIQ_KEY of each message
	batch   bool
}

// zlibWriters pools zlib writers per level.
type zlibWriters struct {
	level int
	pool  sync.Pool
}

// compress returns body compressed, or nil if that does not make it smaller.
func (z *zlibWriters) compress(body []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(body) / 2)
	w, _ := z.pool.Get().(*zlib.Writer)
	if w == nil {
		var err error
		if w, err = zlib.NewWriterLevel(&buf, z.level); err != nil {
			return nil // the level was checked by newConfig
		}
	} else {
		w.Reset(&buf)
	}
	_, werr := w.Write(body)
	cerr := w.Close()
	z.pool.Put(w)
	if werr != nil || cerr != nil || buf.Len() >= len(body) {
		return nil
	}
	return buf.Bytes()
}

// prepareSingle validates m and builds its properties and body.
func (p *Producer) prepareSingle(m *Message) (*prepared, error) {
	if err := validateMessage(m, p.cfg.maxMessageSize); err != nil {
		return nil, err
	}
	pr := &prepared{topic: m.Topic, body: m.Body, flag: m.Flag}
	uniq := m.props[message.PropUniqKey]
	if uniq == "" {
		uniq = p.inst.UniqKeys().Next()
	}
	pr.uniq = []string{uniq}
	pr.props = string(p.properties(m, uniq, true))
	if len(m.Body) >= p.cfg.compressThreshold {
		if z := p.zlib.compress(m.Body); z != nil {
			pr.body = z
			pr.sysFlag |= message.SysFlagCompressed | message.SysFlagCompressionZLIB
		}
	}
	return pr, nil
}

// properties encodes m's properties plus UNIQ_KEY (and WAIT when wait).
func (p *Producer) properties(m *Message, uniq string, wait bool) []byte {
	out := make([]byte, 0, 64+16*len(m.props))
	for k, v := range m.props {
		if k != message.PropUniqKey && k != message.PropWait {
			out = message.AppendProperty(out, k, v)
		}
	}
	out = message.AppendProperty(out, message.PropUniqKey, uniq)
	if wait {
		out = message.AppendProperty(out, message.PropWait, "true")
	}
	return out
}

// prepareBatch validates msgs and builds the batch body.
func (p *Producer) prepareBatch(msgs []*Message) (*prepared, error) {
	if err := validateBatch(msgs, p.cfg.maxMessageSize); err != nil {
		return nil, err
	}
	pr := &prepared{topic: msgs[0].Topic, batch: true, uniq: make([]string, len(msgs))}
	entries := make([]message.BatchEntry, len(msgs))
	for i, m := range msgs {
		uniq := m.props[message.PropUniqKey]
		if uniq == "" {
			uniq = p.inst.UniqKeys().Next()
		}
		pr.uniq[i] = uniq
		entries[i] = message.BatchEntry{Flag: m.Flag, Body: m.Body, Properties: p.properties(m, uniq, false)}
	}
	body, err := message.EncodeBatch(entries)
	if err != nil {
		return nil, &ValidationError{Rule: RuleBatchTooLarge, Topic: pr.topic, Detail: err.Error()}
	}
	if len(body) > p.cfg.maxMessageSize {
		return nil, &ValidationError{Rule: RuleBatchTooLarge, Topic: pr.topic,
			Detail: fmt.Sprintf("encoded batch of %d messages is %d bytes, over the limit of %d", len(msgs), len(body), p.cfg.maxMessageSize)}
	}
	pr.body = body
	return pr, nil
}

// request builds the send request of pr for queue q.
func (p *Producer) request(pr *prepared, q Queue) *remoting.Command {
	code := remoting.SendMessageV2
	batch := "false"
	if pr.batch {
		code, batch = remoting.SendBatchMessage, "true"
	}
	ext := map[string]string{
		"a": p.cfg.group,
		"b": pr.topic,
		"c": mqclient.AutoCreateTopic,
		"d": p.defaultQueueNums,
		"e": strconv.Itoa(int(q.ID)),
		"f": strconv.Itoa(int(pr.sysFlag)),
		"g": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"h": strconv.Itoa(int(pr.flag)),
		"i": pr.props,
		"j": "0",
		"k": "false",
		"m": batch,
		"n": q.Broker,
	}
	return p.inst.NewRequest(code, ext, pr.body)
}
