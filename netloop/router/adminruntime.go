package router

// GET_BROKER_RUNTIME_INFO (28): the KVTable mqadmin's clusterList and
// brokerStatus print. The figures come from atomics, the statistics
// snapshot and the timer store; the store time of the oldest message is a
// CommitLog read, so the table is built on the pull stage.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pipeline"

	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
	"github.com/wheelmq/wheelmq/storage/message"
)

// brokerVersionDesc is MQVersion's name of remoting.BrokerVersion (the
// API's, which its cluster view names this broker by).
const brokerVersionDesc = broker.VersionDesc

func (r *Router) handleRuntimeInfo(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	// The reply runs on the pull stage, which also does the statfs of the
	// data directory and takes the timer store's lock for its figures.
	r.pullSt.Send(&pull.ReadAt{Offset: r.store.CommitLog.MinOffset(), Reply: func(rec []byte, err error) {
		earliest := int64(-1) // an empty CommitLog: nothing to read
		if err == nil {
			earliest = message.PeekStoreTimestamp(rec)
		}
		body, err := adminbody.KVTable{Table: r.runtimeInfo(time.Now(), earliest)}.Encode()
		r.sendBody(c, cmd, body, err)
	}})
	return nil
}

// runtimeInfo builds the KVTable with the keys RocketMQ 5 sends (those
// mqadmin reads, and the common others), all values as text.
func (r *Router) runtimeInfo(now time.Time, earliest int64) map[string]string {
	snap := r.p.Stats().Load()
	cl := r.store.CommitLog
	boot := r.p.Booted()
	putTotal := r.p.Counters().PutMessages()
	kv := map[string]string{
		"brokerVersionDesc": brokerVersionDesc,
		"brokerVersion":     strconv.Itoa(remoting.BrokerVersion),
		"brokerActive":      strconv.FormatBool(len(r.p.Down()) == 0),
		"bootTimestamp":     strconv.FormatInt(boot.UnixMilli(), 10),
		"runtime":           formatRuntime(now.Sub(boot)),

		"msgPutTotalYesterdayMorning": strconv.FormatInt(snap.PutYesterdayMorning, 10),
		"msgPutTotalTodayMorning":     strconv.FormatInt(snap.PutTodayMorning, 10),
		"msgPutTotalTodayNow":         strconv.FormatInt(putTotal, 10),
		"msgGetTotalYesterdayMorning": strconv.FormatInt(snap.GetYesterdayMorning, 10),
		"msgGetTotalTodayMorning":     strconv.FormatInt(snap.GetTodayMorning, 10),
		"msgGetTotalTodayNow":         strconv.FormatInt(r.p.Counters().GotMessages(), 10),

		"putTps":            formatRates(snap.Put),
		"getTransferredTps": formatRates(snap.GetTransferred),
		"getFoundTps":       formatRates(snap.GetFound),
		"getMissTps":        formatRates(snap.GetMiss),
		"getTotalTps":       formatRates(snap.GetTotal),

		"putMessageTimesTotal":  strconv.FormatInt(putTotal, 10),
		"putMessageSizeTotal":   strconv.FormatInt(r.p.Counters().PutBytes(), 10),
		"putMessageAverageSize": javaDouble(float64(r.p.Counters().PutBytes()) / float64(max(putTotal, 1))),

		"commitLogMinOffset":       strconv.FormatInt(cl.MinOffset(), 10),
		"commitLogMaxOffset":       strconv.FormatInt(cl.MaxOffset(), 10),
		"dispatchBehindBytes":      strconv.FormatInt(max(cl.MaxOffset()-r.store.Dispatched.Load(), 0), 10),
		"remainHowManyDataToFlush": humanBytes(max(cl.MaxOffset()-cl.FlushedOffset(), 0)),
		"earliestMessageTimeStamp": strconv.FormatInt(earliest, 10),
		"pageCacheLockTimeMills":   "0",

		"startAcceptSendRequestTimeStamp": "0",
	}
	if total, free, ok := diskSpace(r.store.Dir); ok {
		ratio := javaDouble(1 - float64(free)/float64(total))
		kv["commitLogDiskRatio"], kv["consumeQueueDiskRatio"] = ratio, ratio
		kv["commitLogDirCapacity"] = fmt.Sprintf("Total : %s, Free : %s.", humanBytes(int64(total)), humanBytes(int64(free)))
	}
	r.stageQueues(kv)
	r.timerInfo(kv, now, snap)
	r.haInfo(kv)
	return kv
}

// haInfo adds the replication state (controller mode only; wheelmq's own
// keys: RocketMQ reports its HA state through GET_BROKER_HA_STATUS):
// haRole (master, replica), haEpoch, haFenced, haConfirmedOffset and
// haSyncStateSet (replica ids, comma-separated). wheelctl cluster list
// shows them.
func (r *Router) haInfo(kv map[string]string) {
	ha := r.p.HA()
	if ha.Mode == pipeline.ReplicationNone {
		return
	}
	ids := make([]string, len(ha.Role.SyncStateSet))
	for i, id := range ha.Role.SyncStateSet {
		ids[i] = strconv.FormatInt(id, 10)
	}
	kv["haRole"] = ha.Role.Kind.String()
	kv["haEpoch"] = strconv.FormatInt(ha.Role.Epoch, 10)
	kv["haFenced"] = strconv.FormatBool(ha.Role.Fenced)
	kv["haConfirmedOffset"] = strconv.FormatInt(ha.Confirmed, 10)
	kv["haSyncStateSet"] = strings.Join(ids, ",")
}

// stageQueues reports the stages' mailbox depths where RocketMQ reports
// its thread pools' queues: sends wait at the commitlog writer, pulls at
// the pull stage; wheelmq has no other request pools.
func (r *Router) stageQueues(kv map[string]string) {
	depth := func(name string) string {
		if s := r.p.Stage(name); s != nil {
			return strconv.FormatInt(s.Depth(), 10)
		}
		return "0"
	}
	kv["sendThreadPoolQueueSize"] = depth(writer.StageName)
	kv["sendThreadPoolQueueCapacity"] = strconv.FormatInt(r.cfg.MaxWriterBacklog, 10)
	kv["pullThreadPoolQueueSize"] = depth(pull.StageName)
	kv["pullThreadPoolQueueCapacity"] = "0"
	for _, pool := range []string{"send", "pull", "query", "litePull", "ack"} {
		kv[pool+"ThreadPoolQueueHeadWaitTimeMills"] = "0"
	}
	for _, pool := range []string{"query", "litePull", "ack"} {
		kv[pool+"ThreadPoolQueueSize"], kv[pool+"ThreadPoolQueueCapacity"] = "0", "0"
	}
}

// timerInfo adds the timer figures of clusterList's #Timer(Progress)
// column: how far delivery is behind (s), timer messages stored and not yet
// in the wheel, timers due and loaded for delivery, and the wheel's rates.
func (r *Router) timerInfo(kv map[string]string, now time.Time, snap *stats.Snapshot) {
	w := r.p.Wheel()
	st := w.Stats()
	behind := int64(0)
	if next, ok := w.NextDue(); ok && st.Pending > 0 && next < now.UnixMilli() {
		behind = (now.UnixMilli() - next) / 1000
	}
	offsetBehind := int64(0)
	if q := r.store.Queues.Lookup(timer.Topic, 0); q != nil {
		offsetBehind = max(q.MaxOffset()-(w.Checkpoint().EnqueueQueueOffset+1), 0)
	}
	kv["timerReadBehind"] = strconv.FormatInt(behind, 10)
	kv["timerOffsetBehind"] = strconv.FormatInt(offsetBehind, 10)
	kv["timerCongestNum"] = strconv.Itoa(st.Loaded)
	kv["timerEnqueueTps"] = javaDouble(snap.TimerEnqueue)
	kv["timerDequeueTps"] = javaDouble(snap.TimerDequeue)
}

// diskSpace returns the size and the free space of the file system
// holding dir.
func diskSpace(dir string) (total, free uint64, ok bool) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || fs.Blocks == 0 {
		return 0, 0, false
	}
	bs := uint64(fs.Bsize)
	return fs.Blocks * bs, fs.Bavail * bs, true
}

// formatRates renders rates like StoreStatsService: "tps10 tps60 tps600".
func formatRates(r stats.Rates) string {
	return javaDouble(r[0]) + " " + javaDouble(r[1]) + " " + javaDouble(r[2])
}

// javaDouble renders f as Java's Double.toString does for ordinary values
// (always with a fraction).
func javaDouble(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "0.0"
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// formatRuntime renders an uptime like StoreStatsService.getFormatRuntime.
func formatRuntime(d time.Duration) string {
	ms := d.Milliseconds()
	const sec, minute, hour, day = 1000, 60 * 1000, 3600 * 1000, 24 * 3600 * 1000
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", ms/day, ms%day/hour, ms%hour/minute, ms%minute/sec)
}

// humanBytes renders a size like RocketMQ's MixAll.humanReadableByteCount
// (binary units): "512 B", "1.5 KiB", "9.8 GiB".
func humanBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	exp := int(math.Log(float64(n)) / math.Log(1024))
	return fmt.Sprintf("%.1f %ciB", float64(n)/math.Pow(1024, float64(exp)), "KMGTPE"[exp-1])
}
