package wirecode

// Request codes (RocketMQ RequestCode) that wheelmq serves or sends.
const (
	SendMessage                   int32 = 10
	PullMessage                   int32 = 11
	QueryMessage                  int32 = 12
	QueryConsumerOffset           int32 = 14
	UpdateConsumerOffset          int32 = 15
	UpdateAndCreateTopic          int32 = 17
	GetAllTopicConfig             int32 = 21
	UpdateBrokerConfig            int32 = 25
	GetBrokerConfig               int32 = 26
	GetBrokerRuntimeInfo          int32 = 28
	SearchOffsetByTimestamp       int32 = 29
	GetMaxOffset                  int32 = 30
	GetMinOffset                  int32 = 31
	ViewMessageByID               int32 = 33
	HeartBeat                     int32 = 34
	UnregisterClient              int32 = 35
	ConsumerSendMsgBack           int32 = 36
	EndTransaction                int32 = 37
	GetConsumerListByGroup        int32 = 38
	CheckTransactionState         int32 = 39
	NotifyConsumerIDsChanged      int32 = 40
	LockBatchMQ                   int32 = 41
	UnlockBatchMQ                 int32 = 42
	CheckClientConfig             int32 = 46
	PutKVConfig                   int32 = 100
	GetKVConfig                   int32 = 101
	DeleteKVConfig                int32 = 102
	RegisterBroker                int32 = 103
	UnregisterBroker              int32 = 104
	GetRouteInfoByTopic           int32 = 105
	GetBrokerClusterInfo          int32 = 106
	GetAllTopicListFromNameserver int32 = 206
	DeleteTopicInBroker           int32 = 215
	DeleteTopicInNamesrv          int32 = 216
	GetKVListByNamespace          int32 = 219
	WipeWritePermOfBroker         int32 = 205
	GetTopicsByCluster            int32 = 224
	AddWritePermOfBroker          int32 = 327
	GetSystemTopicListFromNS      int32 = 304
	GetNamesrvConfig              int32 = 319
	SendMessageV2                 int32 = 310
	SendBatchMessage              int32 = 320
	SendReplyMessage              int32 = 324
	SendReplyMessageV2            int32 = 325
	// PushReplyMessageToClient carries a reply to the requesting client
	// (broker -> client, request/reply).
	PushReplyMessageToClient int32 = 326
	// LitePullMessage is PULL_MESSAGE as DefaultLitePullConsumer sends it.
	LitePullMessage int32 = 361
)

// Response codes (RocketMQ ResponseCode) that wheelmq answers with.
const (
	Success                 int32 = 0
	SystemError             int32 = 1
	SystemBusy              int32 = 2
	RequestCodeNotSupported int32 = 3
	FlushDiskTimeout        int32 = 10
	SlaveNotAvailable       int32 = 11
	FlushSlaveTimeout       int32 = 12
	MessageIllegal          int32 = 13
	ServiceNotAvailable     int32 = 14
	NoPermission            int32 = 16
	TopicNotExist           int32 = 17
	PullNotFound            int32 = 19
	PullRetryImmediately    int32 = 20
	PullOffsetMoved         int32 = 21
	QueryNotFound           int32 = 22
	SubscriptionParseFailed int32 = 23
	SubscriptionNotExist    int32 = 24
	FilterDataNotExist      int32 = 27
	FilterDataNotLatest     int32 = 28
	InvalidParameter        int32 = 29
	IllegalOperation        int32 = 604
	// PollingFull answers a POP long poll refused because too many are
	// parked (POLLING_FULL).
	PollingFull int32 = 209
	// PollingTimeout answers a POP long poll that ended without a message
	// (POLLING_TIMEOUT).
	PollingTimeout int32 = 210
)

// POP request codes (RocketMQ 5 RequestCode), served by actors/pop.
const (
	PopMessage                 int32 = 200050
	AckMessage                 int32 = 200051
	PeekMessage                int32 = 200052
	ChangeMessageInvisibleTime int32 = 200053
	Notification               int32 = 200054
	PollingInfo                int32 = 200055
	BatchAckMessage            int32 = 200151
	// QueryAssignment asks the broker which queues of a topic a consumer
	// of a group reads, and in which mode (a Java push consumer with
	// setClientRebalance(false)).
	QueryAssignment int32 = 400
	// SetMessageRequestMode sets a (topic, group)'s consumption model,
	// PULL or POP (RocketMQ 5, mqadmin setConsumeMode).
	SetMessageRequestMode int32 = 401
)

// Lite topic codes (RocketMQ 5.5's RequestCode and ResponseCode; docs/
// lite.md, "Over remoting").
const (
	// PopLiteMessage pops messages of a client's lite topics
	// (POP_LITE_MESSAGE).
	PopLiteMessage int32 = 200070
	// LiteSubscriptionCtl changes lite subscriptions (LITE_SUBSCRIPTION_CTL).
	LiteSubscriptionCtl int32 = 200071
	// LiteSubscriptionQuotaExceeded answers a subscription past the quota
	// (LITE_SUBSCRIPTION_QUOTA_EXCEEDED).
	LiteSubscriptionQuotaExceeded int32 = 2018
)

// wheelmq extensions to the request codes (outside RocketMQ's ranges).
const (
	// RecallMessage withdraws a pending timer message by its recall handle
	// (RECALL_MESSAGE, RocketMQ 5.3.2+).
	RecallMessage int32 = 370
	// CancelTimerMessage cancels a pending timer message by the offset
	// message id of its stored copy (wheelctl cancel). extFields: msgId.
	CancelTimerMessage int32 = 3501
	// ListTimerMessages answers one page of a topic's pending timer
	// messages as JSON (wheelctl timers). extFields: topic, after, limit.
	ListTimerMessages int32 = 3502
)

// Admin request codes (RocketMQ RequestCode) of the operator tools.
const (
	GetEarliestMsgStoretime          int32 = 32
	UpdateAndCreateTopicList         int32 = 18
	UpdateAndCreateSubscriptionGroup int32 = 200
	UpdateAndCreateGroupList         int32 = 225
	GetAllSubscriptionGroupConfig    int32 = 201
	GetTopicStatsInfo                int32 = 202
	GetConsumerConnectionList        int32 = 203
	GetProducerConnectionList        int32 = 204
	DeleteSubscriptionGroup          int32 = 207
	GetConsumeStats                  int32 = 208
	ResetConsumerClientOffset        int32 = 220
	InvokeBrokerToResetOffset        int32 = 222
	QueryTopicConsumeByWho           int32 = 300
	GetSystemTopicListFromBroker     int32 = 305
	GetConsumerRunningInfo           int32 = 307
	ConsumeMessageDirectly           int32 = 309
	GetAllProducerInfo               int32 = 328
	QueryTopicsByConsumer            int32 = 343
	QuerySubscriptionByConsumer      int32 = 345
	GetSubscriptionGroupConfig       int32 = 352
	CloneGroupOffset                 int32 = 314
	GetBrokerConsumeStats            int32 = 317
	GetTopicConfig                   int32 = 351
)

// Admin response codes (RocketMQ ResponseCode).
const (
	SubscriptionGroupNotExist int32 = 26
	ConsumerNotOnline         int32 = 206
	ConsumeMsgTimeout         int32 = 207
)

// ACL 2.0 admin request codes (RocketMQ 5.3 RequestCode AUTH_*): users and
// their policies, served by the broker (netloop/router/authadmin.go).
const (
	AuthCreateUser int32 = 3001
	AuthUpdateUser int32 = 3002
	AuthDeleteUser int32 = 3003
	AuthGetUser    int32 = 3004
	AuthListUser   int32 = 3005
	AuthCreateACL  int32 = 3006
	AuthUpdateACL  int32 = 3007
	AuthDeleteACL  int32 = 3008
	AuthGetACL     int32 = 3009
	AuthListACL    int32 = 3010
)

// Controller request codes (RocketMQ 5 RequestCode CONTROLLER_*, RIP-44),
// served by the controller embedded in the name server (actors/controller).
const (
	BrokerHeartbeat             int32 = 904
	ControllerAlterSyncStateSet int32 = 1001
	ControllerElectMaster       int32 = 1002
	ControllerRegisterBroker    int32 = 1003
	ControllerGetReplicaInfo    int32 = 1004
	ControllerGetMetadataInfo   int32 = 1005
	ControllerGetSyncStateData  int32 = 1006
	GetBrokerEpochCache         int32 = 1007
	UpdateControllerConfig      int32 = 1009
	GetControllerConfig         int32 = 1010
	ControllerGetNextBrokerID   int32 = 1012
	ControllerApplyBrokerID     int32 = 1013
)

// Controller response codes (RocketMQ ResponseCode CONTROLLER_*, RIP-44).
const (
	ControllerFencedMasterEpoch       int32 = 2000
	ControllerFencedSyncStateSetEpoch int32 = 2001
	ControllerInvalidMaster           int32 = 2002
	ControllerInvalidReplicas         int32 = 2003
	ControllerMasterNotAvailable      int32 = 2004
	ControllerInvalidRequest          int32 = 2005
	ControllerBrokerNotAlive          int32 = 2006
	ControllerNotLeader               int32 = 2007
	ControllerBrokerMetadataNotExist  int32 = 2008
	ControllerElectMasterFailed       int32 = 2012
	ControllerBrokerIDInvalid         int32 = 2014
)
