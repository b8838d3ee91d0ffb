package pipeline

// rocketmq-exporter's names (apache/rocketmq-exporter, RMQMetricsCollector)
// with the exporter's labels, read by Grafana dashboard 10477 ("RocketMQ
// Exporter Overview", rocketmq_exporter_overview.json). The exporter builds
// them from admin requests (GET_BROKER_RUNTIME_INFO, GET_TOPIC_STATS_INFO,
// GET_CONSUME_STATS, ...); here they come from the same counters and
// tables those requests are answered from.
//
// Not served: rocketmq_client_* (consume RT and TPS, pull RT and TPS,
// failed messages), which the exporter asks each consumer process for
// (GET_CONSUMER_RUNNING_INFO): they are the client's own measurements, not
// the broker's; wheelctl consumer status relays the request.

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stats"
)

// brokerVersionDesc is the RocketMQ version the broker answers as.
const brokerVersionDesc = "V5_3_3"

// adminWait bounds a scrape's wait for the offsets and pull stages.
const adminWait = 2 * time.Second

// exporter writes the exporter's series.
func (c *rmqCollector) exporter(e *emitter) {
	p := c.p
	snap := p.statsView.Load()
	cluster, broker, ip := p.cfg.Cluster, p.cfg.BrokerName, p.advertisedAddr()
	gauge := prometheus.GaugeValue

	numL := []string{"cluster", "brokerIP", "broker"}
	e.emit("rocketmq_broker_tps", "Messages clients sent per second, over 10 s (BrokerPutNums).", gauge, snap.Put[0], numL, cluster, ip, broker)
	e.emit("rocketmq_broker_qps", "Messages consumed per second by every protocol, over 10 s (BrokerGetNums).", gauge,
		snap.GetTransferred[0], numL, cluster, ip, broker)

	rtL := []string{"cluster", "brokerIP", "brokerHost", "des", "boottime", "broker_version"}
	rv := []string{cluster, ip, broker, "", p.bootMs(), brokerVersionDesc}
	rt := func(name string, v float64) {
		e.emit("rocketmq_brokeruntime_"+name, "GET_BROKER_RUNTIME_INFO figure (rocketmq-exporter's name).", gauge, v, rtL, rv...)
	}
	cl := p.store.CommitLog
	for i, w := range []string{"10", "60", "600"} {
		rt("put_tps"+w, snap.Put[i])
		rt("gettransfered_tps"+w, snap.GetTransferred[i])
		rt("getfound_tps"+w, snap.GetFound[i])
		rt("getmiss_tps"+w, snap.GetMiss[i])
		rt("gettotal_tps"+w, snap.GetTotal[i])
	}
	cs := &p.counters
	rt("msg_put_total_today_now", float64(cs.PutMessages()))
	rt("msg_puttotal_todaymorning", float64(snap.PutTodayMorning))
	rt("msg_puttotal_yesterdaymorning", float64(snap.PutYesterdayMorning))
	rt("msg_gettotal_today_now", float64(cs.GotMessages()))
	rt("msg_gettotal_todaymorning", float64(snap.GetTodayMorning))
	rt("msg_gettotal_yesterdaymorning", float64(snap.GetYesterdayMorning))
	rt("put_message_size_total", float64(cs.PutBytes()))
	rt("put_message_average_size", float64(cs.PutBytes())/float64(max(cs.PutMessages(), 1)))
	rt("putmessage_times_total", float64(cs.PutMessages()))
	rt("commitlog_maxoffset", float64(cl.MaxOffset()))
	rt("commitlog_minoffset", float64(cl.MinOffset()))
	rt("dispatch_behind_bytes", float64(max(cl.MaxOffset()-p.store.Dispatched.Load(), 0)))
	if total, free, ok := diskSpace(p.store.Dir); ok {
		ratio := 1 - float64(free)/float64(total)
		rt("commitlog_disk_ratio", ratio)
		rt("consumequeue_disk_ratio", ratio) // one data directory, one disk
		rt("commitlogdir_capacity_total", float64(total))
		rt("commitlogdir_capacity_free", float64(free))
	}
	for i, n := range p.counters.PutTimes() {
		rt("pmdt_"+stats.PutTimeNames[i], float64(n))
	}
	// wheelmq has no request thread pools: a send waits in the commitlog
	// writer's inbox, a pull in the pull stage's; no queue head waits in a
	// pool (GET_BROKER_RUNTIME_INFO reports 0 as well).
	for _, pool := range []string{"send", "pull", "query"} {
		rt(pool+"_threadpoolqueue_headwait_timemills", 0)
	}

	topicL := []string{"cluster", "broker", "topic"}
	bytesIn := map[string][2]int64{}
	p.counters.EachIn(func(k stats.TopicType, v *stats.Pair) {
		b := bytesIn[k.Topic]
		bytesIn[k.Topic] = [2]int64{b[0] + v.Msgs.Load(), b[1] + v.Bytes.Load()}
	})
	for topic, tps := range snap.TopicPut {
		e.emit("rocketmq_producer_tps", "Messages clients sent to the topic per second, over a minute (TopicPutNums).",
			gauge, tps, topicL, cluster, broker, topic)
		b := bytesIn[topic]
		e.emit("rocketmq_producer_message_size", "Bytes clients sent to the topic per second, over a minute (TopicPutMessageSize: the rate times the mean size since the start).",
			gauge, tps*float64(b[1])/float64(max(b[0], 1)), topicL, cluster, broker, topic)
	}
	tab := p.topicView.Load()
	maxOf := func(topic string) (sum int64, queues int32) {
		cfg, ok := tab.Topics[topic]
		if !ok {
			return 0, 0
		}
		for q := range cfg.WriteQueueNums {
			if cq := p.store.Queues.Lookup(topic, q); cq != nil {
				sum += cq.MaxOffset()
			}
		}
		return sum, cfg.WriteQueueNums
	}
	for topic := range tab.Topics {
		sum, _ := maxOf(topic)
		e.emit("rocketmq_producer_offset", "Sum of the topic's queue max offsets (TopicOffset).", prometheus.CounterValue,
			float64(sum), topicL, cluster, broker, topic)
	}
	c.cachedGroups(e, func(ge *emitter) { c.groupSeries(ge, snap, maxOf) })
}

// cachedGroups sends the group series, built by build at most once per
// groupsEvery. The lock is not held while they are built: two scrapes at
// once may both build them.
func (c *rmqCollector) cachedGroups(e *emitter, build func(*emitter)) {
	c.mu.Lock()
	ms, fresh := c.groups, time.Since(c.groupsAt) < groupsEvery
	c.mu.Unlock()
	if !fresh {
		ms = nil
		build(&emitter{send: func(m prometheus.Metric) { ms = append(ms, m) }, descs: e.descs})
		c.mu.Lock()
		c.groups, c.groupsAt = ms, time.Now()
		c.mu.Unlock()
	}
	for _, m := range ms {
		e.send(m)
	}
}

// groupSeries writes the consumer-group series: rates, offsets and lag.
func (c *rmqCollector) groupSeries(e *emitter, snap *stats.Snapshot, maxOf func(string) (int64, int32)) {
	p := c.p
	cluster, broker := p.cfg.Cluster, p.cfg.BrokerName
	gauge := prometheus.GaugeValue
	groupL := []string{"cluster", "broker", "topic", "group"}
	bytesOut := map[stats.GroupTopic][2]int64{}
	p.counters.EachServed(func(k stats.GroupTopic, v *stats.Pair) { bytesOut[k] = [2]int64{v.Msgs.Load(), v.Bytes.Load()} })
	for gt, tps := range snap.GroupGet {
		e.emit("rocketmq_consumer_tps", "Messages the group consumed from the topic per second, over a minute, by every protocol (GroupGetNums).",
			gauge, tps, groupL, cluster, broker, gt.Topic, gt.Group)
		b := bytesOut[gt]
		e.emit("rocketmq_consumer_message_size", "Bytes the group consumed from the topic per second (the rate times the mean size since the start).",
			gauge, tps*float64(b[1])/float64(max(b[0], 1)), groupL, cluster, broker, gt.Topic, gt.Group)
	}
	all := c.allOffsets()
	if all == nil {
		return
	}
	var positions []pull.QueuePos
	var keys []groupTopic
	diffL := []string{"group", "topic", "countOfOnlineConsumers", "msgModel"}
	accL := []string{"cluster", "broker", "group", "topic"}
	dlqL := []string{"cluster", "broker", "group"}
	for g, topics := range all {
		online := strconv.Itoa(p.subView.Online(g))
		model := p.subView.MessageModel(g)
		if model == "" {
			model = "CLUSTERING"
		}
		var retryDiff int64
		for topic, qs := range topics {
			brokerSum, queues := maxOf(topic)
			if queues == 0 {
				continue
			}
			var consumed int64
			for q := range queues {
				consumed += max(qs[q], 0)
				positions = append(positions, pull.QueuePos{Topic: topic, QueueID: q, Offset: max(qs[q], 0)})
				keys = append(keys, groupTopic{g, topic})
			}
			diff := max(brokerSum-consumed, 0)
			e.emit("rocketmq_consumer_offset", "Sum of the group's committed offsets on the topic (GroupBrokerTotalOffset).",
				prometheus.CounterValue, float64(consumed), groupL, cluster, broker, topic, g)
			if stats.IsRetryTopic(topic) {
				retryDiff += diff
				continue
			}
			e.emit("rocketmq_group_diff", "Messages of the topic the group has not consumed (GroupDiff).", gauge,
				float64(diff), diffL, g, topic, online, model)
			e.emit("rocketmq_message_accumulation", "Messages of the topic the group has not consumed: how far its offsets lag behind.",
				gauge, float64(diff), accL, cluster, broker, g, topic)
		}
		e.emit("rocketmq_group_retrydiff", "Messages of the group's %RETRY% topic not yet consumed (GroupRetryDiff).", gauge,
			float64(retryDiff), diffL, g, "%RETRY%"+g, online, model)
		dlq, _ := maxOf("%DLQ%" + g)
		e.emit("rocketmq_group_dlqdiff", "Messages in the group's %DLQ% topic (GroupDLQDiff).", gauge, float64(dlq),
			diffL, g, "%DLQ%"+g, online, model)
		e.emit("rocketmq_topic_dlq_offset", "Max offset of the group's %DLQ% topic.", prometheus.CounterValue, float64(dlq),
			dlqL, cluster, broker, g)
	}
	c.latencyByStoreTime(e, positions, keys)
}

// groupTopic is a consumer group's topic.
type groupTopic struct{ group, topic string }

// latencyByStoreTime writes rocketmq_group_get_latency_by_storetime: per
// group and topic, how long (ms) the oldest message not yet consumed has
// been stored (0: none waiting).
func (c *rmqCollector) latencyByStoreTime(e *emitter, positions []pull.QueuePos, keys []groupTopic) {
	p := c.p
	st := p.Stage(pull.StageName)
	if st == nil || len(positions) == 0 {
		return
	}
	got := make(chan []pull.QueueProgress, 1)
	st.Send(&pull.StoreTimes{Positions: positions, Reply: func(r []pull.QueueProgress) { got <- r },
		FailFunc: func(error) { got <- nil }})
	var res []pull.QueueProgress
	select {
	case res = <-got:
	case <-time.After(adminWait):
		return
	}
	now := time.Now().UnixMilli()
	lat := map[groupTopic]int64{}
	for i, pr := range res {
		k := keys[i]
		if _, ok := lat[k]; !ok {
			lat[k] = 0
		}
		if pr.StoreTime > 0 {
			lat[k] = max(lat[k], now-pr.StoreTime)
		}
	}
	for k, v := range lat {
		e.emit("rocketmq_group_get_latency_by_storetime", "How long (ms) the oldest message the group has not consumed has been stored (GroupGetLatencyByStoreTime).",
			prometheus.GaugeValue, float64(v), []string{"cluster", "broker", "topic", "group"}, p.cfg.Cluster, p.cfg.BrokerName, k.topic, k.group)
	}
}

// allOffsets asks the offsets stage for every group's committed offsets
// (nil when it does not answer in time).
func (c *rmqCollector) allOffsets() map[string]map[string]map[int32]int64 {
	st := c.p.Stage(offsets.StageName)
	if st == nil {
		return nil
	}
	got := make(chan map[string]map[string]map[int32]int64, 1)
	st.Send(&offsets.AllGroupOffsets{Reply: func(m map[string]map[string]map[int32]int64) { got <- m },
		FailFunc: func(error) { got <- nil }})
	select {
	case m := <-got:
		return m
	case <-time.After(adminWait):
		return nil
	}
}
