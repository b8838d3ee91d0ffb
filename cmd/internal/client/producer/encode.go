package producer

// The send request. Single messages go as SEND_MESSAGE_V2 (310) and batches
// as SEND_BATCH_MESSAGE (320), both with RocketMQ's short V2 header keys:
//
//	a producerGroup   b topic          c defaultTopic ("TBW102")
//	d defaultTopicQueueNums            e queueId      f sysFlag
//	g bornTimestamp   h flag           i properties   j reconsumeTimes ("0")
//	k unitMode ("false")               m batch        n brokerName
//
// Properties are the message's own (in the order they were set) plus
// UNIQ_KEY (the client message id, kept if the caller set one) and
// WAIT=true. The header is written straight into the connection's output
// buffer (remoting.ExtWriter): no map, no number formatted into a string. A body of at least the
// compression threshold is zlib-compressed when that makes it smaller, and
// the sysFlag gets COMPRESSED (0x1) and the ZLIB compression type (0x300),
// as Java 5 producers send it. A batch body is the concatenation of
// per-message records (message.EncodeBatch); batches are not compressed,
// because the broker applies one sysFlag to every message of a batch.

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/client/mqclient"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// prepared is a validated send, ready to be encoded for any queue, with
// the request of its current attempt. It lives in a pooled op, so its
// buffers are reused from send to send.
type prepared struct {
	topic   string
	body    []byte // compressed, or a batch body
	sysFlag int32
	flag    int32
	props   []byte   // encoded properties (single messages)
	uniq    []string // UNIQ_KEY of each message
	uniqOne [1]string
	batch   bool

	// The request of the current attempt (see request).
	group     string
	queueNums string
	q         Queue
	bornMs    int64
	req       remoting.Command
}

// maxKeptProps is the largest properties buffer an op keeps for reuse.
const maxKeptProps = 4 << 10

// reset clears pr for reuse, keeping its properties buffer. What is not
// cleared (the request's header values) is set anew by every send.
func (pr *prepared) reset() {
	pr.props = pr.props[:0]
	if cap(pr.props) > maxKeptProps {
		pr.props = nil
	}
	pr.body, pr.uniq, pr.uniqOne[0] = nil, nil, ""
	pr.req.Body, pr.req.Ext = nil, nil
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

// prepareSingle validates m and builds its properties and body into pr; a
// new UNIQ_KEY is made for time now.
func (p *Producer) prepareSingle(pr *prepared, m *Message, now time.Time) error {
	if err := validateMessage(m, p.cfg.maxMessageSize); err != nil {
		return err
	}
	pr.topic, pr.body, pr.flag, pr.sysFlag, pr.batch = m.Topic, m.Body, m.Flag, 0, false
	pr.props = p.appendProperties(pr.props[:0], m, &pr.uniqOne[0], true, now)
	pr.uniq = pr.uniqOne[:]
	if len(m.Body) >= p.cfg.compressThreshold {
		if z := p.zlib.compress(m.Body); z != nil {
			pr.body = z
			pr.sysFlag |= message.SysFlagCompressed | message.SysFlagCompressionZLIB
		}
	}
	return nil
}

// appendProperties appends m's properties (validated), then UNIQ_KEY, then
// WAIT when wait, to dst. The UNIQ_KEY is the caller's if m has one, else a
// new one for time now; it is stored in *uniq.
func (p *Producer) appendProperties(dst []byte, m *Message, uniq *string, wait bool, now time.Time) []byte {
	var own *prop
	for i := range m.numProps() {
		x := m.propAt(i)
		switch x.key {
		case message.PropUniqKey:
			own = x
			continue
		case message.PropWait:
			continue
		}
		dst = append(dst, x.key...)
		dst = append(dst, message.NameValueSeparator)
		dst = x.appendValue(dst)
		dst = append(dst, message.PropertySeparator)
	}
	dst = append(dst, message.PropUniqKey...)
	dst = append(dst, message.NameValueSeparator)
	at := len(dst)
	if own != nil {
		dst = own.appendValue(dst)
		*uniq = own.value()
	} else {
		dst = p.inst.UniqKeys().AppendNextAt(dst, now)
		*uniq = string(dst[at:])
	}
	dst = append(dst, message.PropertySeparator)
	if wait {
		dst = append(dst, message.PropWait...)
		dst = append(dst, message.NameValueSeparator)
		dst = append(dst, "true"...)
		dst = append(dst, message.PropertySeparator)
	}
	return dst
}

// prepareBatch validates msgs and builds the batch body into pr.
func (p *Producer) prepareBatch(pr *prepared, msgs []*Message) error {
	if err := validateBatch(msgs, p.cfg.maxMessageSize); err != nil {
		return err
	}
	pr.topic, pr.batch, pr.uniq = msgs[0].Topic, true, make([]string, len(msgs))
	entries := make([]message.BatchEntry, len(msgs))
	now := time.Now()
	for i, m := range msgs {
		entries[i] = message.BatchEntry{Flag: m.Flag, Body: m.Body, Properties: p.appendProperties(nil, m, &pr.uniq[i], false, now)}
	}
	body, err := message.EncodeBatch(entries)
	if err != nil {
		return &ValidationError{Rule: RuleBatchTooLarge, Topic: pr.topic, Detail: err.Error()}
	}
	if len(body) > p.cfg.maxMessageSize {
		return &ValidationError{Rule: RuleBatchTooLarge, Topic: pr.topic,
			Detail: fmt.Sprintf("encoded batch of %d messages is %d bytes, over the limit of %d", len(msgs), len(body), p.cfg.maxMessageSize)}
	}
	pr.body = body
	return nil
}

// request builds the send request of pr for queue q, born at now. The
// command is pr's own, reused by the next attempt: the connection encodes
// it before the send returns.
func (p *Producer) request(pr *prepared, q Queue, now time.Time) *remoting.Command {
	code := remoting.SendMessageV2
	if pr.batch {
		code = remoting.SendBatchMessage
	}
	pr.group, pr.queueNums, pr.q, pr.bornMs = p.cfg.group, p.defaultQueueNums, q, now.UnixMilli()
	pr.req = remoting.Command{Code: code, Language: "GO", Version: mqclient.ClientVersion,
		Serialize: p.serialize, Body: pr.body, Ext: pr}
	return &pr.req
}

// WriteExt writes the header fields of the send request (see the top of
// this file), in key order.
func (pr *prepared) WriteExt(e *remoting.ExtEncoder) {
	e.String("a", pr.group)
	e.String("b", pr.topic)
	e.String("c", mqclient.AutoCreateTopic)
	e.String("d", pr.queueNums)
	e.Int("e", int64(pr.q.ID))
	e.Int("f", int64(pr.sysFlag))
	e.Int("g", pr.bornMs)
	e.Int("h", int64(pr.flag))
	e.Bytes("i", pr.props)
	e.String("j", "0")
	e.String("k", "false")
	if pr.batch {
		e.String("m", "true")
	} else {
		e.String("m", "false")
	}
	e.String("n", pr.q.Broker)
}
