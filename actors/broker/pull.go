package broker

// PULL_MESSAGE (11) and the offset family: QUERY_CONSUMER_OFFSET (14),
// UPDATE_CONSUMER_OFFSET (15), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31),
// SEARCH_OFFSET_BY_TIMESTAMP (29).

import (
	"fmt"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// maxSuspend caps how long a pull may be parked.
const maxSuspend = 60 * time.Second

// fieldParser collects missing or malformed header fields.
type fieldParser struct {
	cmd *remoting.Command
	// get looks a field up; nil means cmd.Field.
	get  func(string) string
	errs []string
}

func (p *fieldParser) field(k string) string {
	if p.get != nil {
		return p.get(k)
	}
	return p.cmd.Field(k)
}

func (p *fieldParser) str(k string) string {
	v := p.field(k)
	if v == "" {
		p.errs = append(p.errs, "the custom field <"+k+"> is null")
	}
	return v
}

func (p *fieldParser) int(k string, required bool, def int64) int64 {
	return p.intBits(k, required, def, 64)
}

// intBits parses a field that must fit in bits bits.
func (p *fieldParser) intBits(k string, required bool, def int64, bits int) int64 {
	v := p.field(k)
	if v == "" {
		if required {
			p.errs = append(p.errs, "the custom field <"+k+"> is null")
		}
		return def
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		p.errs = append(p.errs, fmt.Sprintf("the custom field <%s> is not a number: %q", k, v))
	}
	return n
}

func (p *fieldParser) err() string {
	if len(p.errs) == 0 {
		return ""
	}
	return fmt.Sprint(p.errs)
}

func (b *Broker) handlePull(c *netloop.Conn, cmd *remoting.Command) {
	p := fieldParser{cmd: cmd}
	group := p.str("consumerGroup")
	topic := p.str("topic")
	queueID := int32(p.int("queueId", true, 0))
	offset := p.int("queueOffset", true, 0)
	maxNums := int32(p.int("maxMsgNums", true, 32))
	sysFlag := int32(p.int("sysFlag", true, 0))
	commitOffset := p.int("commitOffset", true, -1)
	suspend := time.Duration(p.int("suspendTimeoutMillis", false, 0)) * time.Millisecond
	if e := p.err(); e != "" {
		b.reply(c, cmd, remoting.InvalidParameter, e)
		return
	}
	cfg, ok := b.topicView.Get(topic)
	if !ok {
		b.reply(c, cmd, remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!", topic))
		return
	}
	if cfg.Perm&meta.PermRead == 0 {
		b.reply(c, cmd, remoting.NoPermission, fmt.Sprintf("the topic[%s] pulling message is forbidden", topic))
		return
	}
	if queueID < 0 || queueID >= max(cfg.ReadQueueNums, cfg.WriteQueueNums) {
		b.reply(c, cmd, remoting.InvalidParameter,
			fmt.Sprintf("queueId[%d] is illegal, topic[%s] has %d read queues", queueID, topic, cfg.ReadQueueNums))
		return
	}
	if sysFlag&pull.FlagCommitOffset != 0 && commitOffset >= 0 {
		b.offsetsSt.Send(&offsets.Commit{Group: group, Topic: topic, QueueID: queueID, Offset: commitOffset})
	}
	var filter pull.Filter
	if sysFlag&pull.FlagSubscription != 0 {
		filter = pull.ParseFilter(cmd.Field("subscription"))
	} else if expr, ok := b.subView.Lookup(group, topic); ok {
		filter = pull.ParseFilter(expr)
	} else {
		filter = pull.Filter{All: true} // clients filter by tag again
	}
	if suspend > maxSuspend {
		suspend = maxSuspend
	}
	b.pullSt.Send(&pull.Request{
		Cmd: cmd, Group: group, Topic: topic, QueueID: queueID, Offset: offset, MaxNums: maxNums,
		SysFlag: sysFlag, Filter: filter, SuspendUntil: time.Now().Add(suspend),
		Reply: func(resp *remoting.Command) { b.send(c, cmd, resp) },
	})
}

func (b *Broker) handleQueryOffset(c *netloop.Conn, cmd *remoting.Command) {
	p := fieldParser{cmd: cmd}
	group, topic := p.str("consumerGroup"), p.str("topic")
	queueID := int32(p.int("queueId", true, 0))
	if e := p.err(); e != "" {
		b.reply(c, cmd, remoting.InvalidParameter, e)
		return
	}
	b.offsetsSt.Send(&offsets.Query{Group: group, Topic: topic, QueueID: queueID, Reply: func(off int64, ok bool) {
		if !ok {
			// Like RocketMQ: a group that never committed starts at 0 while
			// the queue still holds its first message, so nothing sent
			// before the consumer's first start is skipped.
			q := b.store.Queues.Lookup(topic, queueID)
			if q == nil || q.MinOffset() > 0 || q.MaxOffset() == 0 {
				b.reply(c, cmd, remoting.QueryNotFound, "Not found, maybe this group consumer boot first")
				return
			}
			off = 0
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.SetField("offset", strconv.FormatInt(off, 10))
		b.send(c, cmd, resp)
	}})
}

func (b *Broker) handleUpdateOffset(c *netloop.Conn, cmd *remoting.Command) {
	p := fieldParser{cmd: cmd}
	group, topic := p.str("consumerGroup"), p.str("topic")
	queueID := int32(p.int("queueId", true, 0))
	off := p.int("commitOffset", true, 0)
	if e := p.err(); e != "" {
		b.reply(c, cmd, remoting.InvalidParameter, e)
		return
	}
	b.offsetsSt.Send(&offsets.Commit{Group: group, Topic: topic, QueueID: queueID, Offset: off})
	b.reply(c, cmd, remoting.Success, "")
}

// handleQueueBounds answers GET_MAX_OFFSET / GET_MIN_OFFSET from atomics.
func (b *Broker) handleQueueBounds(c *netloop.Conn, cmd *remoting.Command) {
	p := fieldParser{cmd: cmd}
	topic := p.str("topic")
	queueID := int32(p.int("queueId", true, 0))
	if e := p.err(); e != "" {
		b.reply(c, cmd, remoting.InvalidParameter, e)
		return
	}
	var off int64
	if q := b.store.Queues.Lookup(topic, queueID); q != nil {
		if cmd.Code == remoting.GetMaxOffset {
			off = q.MaxOffset()
		} else {
			off = q.MinOffset()
		}
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	resp.SetField("offset", strconv.FormatInt(off, 10))
	b.send(c, cmd, resp)
}

func (b *Broker) handleSearchOffset(c *netloop.Conn, cmd *remoting.Command) {
	p := fieldParser{cmd: cmd}
	topic := p.str("topic")
	queueID := int32(p.int("queueId", true, 0))
	ts := p.int("timestamp", true, 0)
	if e := p.err(); e != "" {
		b.reply(c, cmd, remoting.InvalidParameter, e)
		return
	}
	b.pullSt.Send(&pull.SearchByTime{Topic: topic, QueueID: queueID, Timestamp: ts, Reply: func(off int64) {
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.SetField("offset", strconv.FormatInt(off, 10))
		b.send(c, cmd, resp)
	}})
}
