package brokerconf

// IgnoredKey is a RocketMQ broker.conf key that wheelmq reads and ignores
// on purpose: RocketMQ's shipped configurations and common deployments
// carry it, and wheelmq either always behaves as it asks or has no such
// knob. Any key neither in Mapping nor here is an error, so that a typo
// (flushDiskTpye) or a setting wheelmq cannot honour stops the start.
type IgnoredKey struct {
	Key string
	// Reason is logged with the key's warning and printed in
	// docs/operations.md's table.
	Reason string
}

// Why the keys of a kind are ignored.
const (
	whyPaths   = "wheelmq lays out its store under storePathRootDir (--data) itself"
	whyThreads = "wheelmq sizes its event loops and stages itself; there are no thread pools to size"
	whyFlush   = "wheelmq's flusher keeps its own pace; --flush sync is its group commit"
	whyMemory  = "a Java store's memory or page-cache technique; wheelmq's store has none"
	whyPull    = "wheelmq's pulls are bounded by the client's batch size and the frame size"
	whyHA      = "wheelmq acknowledges a replicated send once every member of the sync-state set holds it, always"
	whyOther   = "no meaning in wheelmq"
	whyFixed   = "listed by GET_BROKER_CONFIG (so that its output reads back), but fixed in wheelmq: no flag sets it"
	whyForce   = "no flag: forced cleaning starts at 85 % (between --disk-clean-ratio and --disk-full-ratio); mqadmin updateBrokerConfig changes it while the broker runs"
)

// Ignore is the allow-list of broker.conf keys ignored on purpose, in
// documentation order.
var Ignore = []IgnoredKey{
	{"storePathCommitLog", whyPaths},
	{"storePathConsumeQueue", whyPaths},
	{"storePathIndex", whyPaths},
	{"storeCheckpoint", whyPaths},
	{"abortFile", whyPaths},
	{"mappedFileSizeConsumeQueue", whyPaths},
	{"rocketmqHome", whyPaths},
	{"sendMessageThreadPoolNums", whyThreads},
	{"pullMessageThreadPoolNums", whyThreads},
	{"queryMessageThreadPoolNums", whyThreads},
	{"adminBrokerThreadPoolNums", whyThreads},
	{"clientManageThreadPoolNums", whyThreads},
	{"consumerManageThreadPoolNums", whyThreads},
	{"serverWorkerThreads", whyThreads},
	{"serverSelectorThreads", whyThreads},
	{"serverCallbackExecutorThreads", whyThreads},
	{"useReentrantLockWhenPutMessage", whyThreads},
	{"waitTimeMillsInSendQueue", whyThreads},
	{"flushIntervalCommitLog", whyFlush},
	{"flushCommitLogTimed", whyFlush},
	{"flushCommitLogLeastPages", whyFlush},
	{"flushIntervalConsumeQueue", whyFlush},
	{"flushConsumeQueueLeastPages", whyFlush},
	{"transientStorePoolEnable", whyMemory},
	{"warmMapedFileEnable", whyMemory},
	{"transferMsgByHeap", whyMemory},
	{"osPageCacheBusyTimeOutMills", whyMemory},
	{"maxTransferCountOnMessageInMemory", whyPull},
	{"maxTransferBytesOnMessageInMemory", whyPull},
	{"maxTransferCountOnMessageInDisk", whyPull},
	{"maxTransferBytesOnMessageInDisk", whyPull},
	{"allAckInSyncStateSet", whyHA},
	{"autoDeleteUnusedStats", whyOther},
	{"timerWheelEnable", whyFixed},
	{"timerMaxDelaySec", whyFixed},
	{"flushConsumerOffsetInterval", whyFixed},
	{"registerNameServerPeriod", whyFixed},
	{"diskSpaceCleanForciblyRatio", whyForce},
}

// ignored returns the allow-listed entry of a key.
func ignored(key string) (IgnoredKey, bool) {
	for _, k := range Ignore {
		if k.Key == key {
			return k, true
		}
	}
	return IgnoredKey{}, false
}
