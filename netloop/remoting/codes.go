package remoting

import "github.com/wheelmq/wheelmq/actors/wirecode"

// The wire codes are defined once, in actors/wirecode; these are the same
// constants under the names the codec and its users have always used.

// Request codes (RocketMQ RequestCode) that wheelmq serves or sends.
const (
	SendMessage                   = wirecode.SendMessage
	PullMessage                   = wirecode.PullMessage
	QueryMessage                  = wirecode.QueryMessage
	QueryConsumerOffset           = wirecode.QueryConsumerOffset
	UpdateConsumerOffset          = wirecode.UpdateConsumerOffset
	UpdateAndCreateTopic          = wirecode.UpdateAndCreateTopic
	GetAllTopicConfig             = wirecode.GetAllTopicConfig
	UpdateBrokerConfig            = wirecode.UpdateBrokerConfig
	GetBrokerConfig               = wirecode.GetBrokerConfig
	GetBrokerRuntimeInfo          = wirecode.GetBrokerRuntimeInfo
	SearchOffsetByTimestamp       = wirecode.SearchOffsetByTimestamp
	GetMaxOffset                  = wirecode.GetMaxOffset
	GetMinOffset                  = wirecode.GetMinOffset
	ViewMessageByID               = wirecode.ViewMessageByID
	HeartBeat                     = wirecode.HeartBeat
	UnregisterClient              = wirecode.UnregisterClient
	ConsumerSendMsgBack           = wirecode.ConsumerSendMsgBack
	EndTransaction                = wirecode.EndTransaction
	GetConsumerListByGroup        = wirecode.GetConsumerListByGroup
	CheckTransactionState         = wirecode.CheckTransactionState
	NotifyConsumerIDsChanged      = wirecode.NotifyConsumerIDsChanged
	LockBatchMQ                   = wirecode.LockBatchMQ
	UnlockBatchMQ                 = wirecode.UnlockBatchMQ
	CheckClientConfig             = wirecode.CheckClientConfig
	PutKVConfig                   = wirecode.PutKVConfig
	GetKVConfig                   = wirecode.GetKVConfig
	DeleteKVConfig                = wirecode.DeleteKVConfig
	RegisterBroker                = wirecode.RegisterBroker
	UnregisterBroker              = wirecode.UnregisterBroker
	GetRouteInfoByTopic           = wirecode.GetRouteInfoByTopic
	GetBrokerClusterInfo          = wirecode.GetBrokerClusterInfo
	GetAllTopicListFromNameserver = wirecode.GetAllTopicListFromNameserver
	DeleteTopicInBroker           = wirecode.DeleteTopicInBroker
	DeleteTopicInNamesrv          = wirecode.DeleteTopicInNamesrv
	GetKVListByNamespace          = wirecode.GetKVListByNamespace
	WipeWritePermOfBroker         = wirecode.WipeWritePermOfBroker
	GetTopicsByCluster            = wirecode.GetTopicsByCluster
	AddWritePermOfBroker          = wirecode.AddWritePermOfBroker
	GetSystemTopicListFromNS      = wirecode.GetSystemTopicListFromNS
	GetNamesrvConfig              = wirecode.GetNamesrvConfig
	SendMessageV2                 = wirecode.SendMessageV2
	SendBatchMessage              = wirecode.SendBatchMessage
	SendReplyMessage              = wirecode.SendReplyMessage
	SendReplyMessageV2            = wirecode.SendReplyMessageV2
	// PushReplyMessageToClient carries a reply to the requesting client
	// (broker -> client, request/reply).
	PushReplyMessageToClient = wirecode.PushReplyMessageToClient
	// LitePullMessage is PULL_MESSAGE as DefaultLitePullConsumer sends it.
	LitePullMessage = wirecode.LitePullMessage
)

// Response codes (RocketMQ ResponseCode) that wheelmq answers with.
const (
	Success                 = wirecode.Success
	SystemError             = wirecode.SystemError
	SystemBusy              = wirecode.SystemBusy
	RequestCodeNotSupported = wirecode.RequestCodeNotSupported
	FlushDiskTimeout        = wirecode.FlushDiskTimeout
	SlaveNotAvailable       = wirecode.SlaveNotAvailable
	FlushSlaveTimeout       = wirecode.FlushSlaveTimeout
	MessageIllegal          = wirecode.MessageIllegal
	ServiceNotAvailable     = wirecode.ServiceNotAvailable
	NoPermission            = wirecode.NoPermission
	TopicNotExist           = wirecode.TopicNotExist
	PullNotFound            = wirecode.PullNotFound
	PullRetryImmediately    = wirecode.PullRetryImmediately
	PullOffsetMoved         = wirecode.PullOffsetMoved
	QueryNotFound           = wirecode.QueryNotFound
	SubscriptionParseFailed = wirecode.SubscriptionParseFailed
	SubscriptionNotExist    = wirecode.SubscriptionNotExist
	FilterDataNotExist      = wirecode.FilterDataNotExist
	FilterDataNotLatest     = wirecode.FilterDataNotLatest
	InvalidParameter        = wirecode.InvalidParameter
	IllegalOperation        = wirecode.IllegalOperation
)

// POP request codes (RocketMQ 5 RequestCode), served by actors/pop.
const (
	PopMessage                 = wirecode.PopMessage
	AckMessage                 = wirecode.AckMessage
	PeekMessage                = wirecode.PeekMessage
	ChangeMessageInvisibleTime = wirecode.ChangeMessageInvisibleTime
	Notification               = wirecode.Notification
	PollingInfo                = wirecode.PollingInfo
	BatchAckMessage            = wirecode.BatchAckMessage
	// QueryAssignment asks the broker which queues of a topic a consumer
	// of a group reads, and in which mode (a Java push consumer with
	// setClientRebalance(false)).
	QueryAssignment = wirecode.QueryAssignment
	// SetMessageRequestMode sets a (topic, group)'s consumption model,
	// PULL or POP (RocketMQ 5, mqadmin setConsumeMode).
	SetMessageRequestMode = wirecode.SetMessageRequestMode
)

// wheelmq extensions to the request codes (outside RocketMQ's ranges).
const (
	// RecallMessage withdraws a pending timer message by its recall handle
	// (RECALL_MESSAGE, RocketMQ 5.3.2+).
	RecallMessage = wirecode.RecallMessage
	// CancelTimerMessage cancels a pending timer message by the offset
	// message id of its stored copy (wheelctl cancel). extFields: msgId.
	CancelTimerMessage = wirecode.CancelTimerMessage
	// ListTimerMessages answers one page of a topic's pending timer
	// messages as JSON (wheelctl timers). extFields: topic, after, limit.
	ListTimerMessages = wirecode.ListTimerMessages
)

// Admin request codes (RocketMQ RequestCode) of the operator tools.
const (
	GetEarliestMsgStoretime          = wirecode.GetEarliestMsgStoretime
	UpdateAndCreateTopicList         = wirecode.UpdateAndCreateTopicList
	UpdateAndCreateSubscriptionGroup = wirecode.UpdateAndCreateSubscriptionGroup
	UpdateAndCreateGroupList         = wirecode.UpdateAndCreateGroupList
	GetAllSubscriptionGroupConfig    = wirecode.GetAllSubscriptionGroupConfig
	GetTopicStatsInfo                = wirecode.GetTopicStatsInfo
	GetConsumerConnectionList        = wirecode.GetConsumerConnectionList
	GetProducerConnectionList        = wirecode.GetProducerConnectionList
	DeleteSubscriptionGroup          = wirecode.DeleteSubscriptionGroup
	GetConsumeStats                  = wirecode.GetConsumeStats
	ResetConsumerClientOffset        = wirecode.ResetConsumerClientOffset
	InvokeBrokerToResetOffset        = wirecode.InvokeBrokerToResetOffset
	QueryTopicConsumeByWho           = wirecode.QueryTopicConsumeByWho
	GetSystemTopicListFromBroker     = wirecode.GetSystemTopicListFromBroker
	GetConsumerRunningInfo           = wirecode.GetConsumerRunningInfo
	ConsumeMessageDirectly           = wirecode.ConsumeMessageDirectly
	GetAllProducerInfo               = wirecode.GetAllProducerInfo
	QueryTopicsByConsumer            = wirecode.QueryTopicsByConsumer
	QuerySubscriptionByConsumer      = wirecode.QuerySubscriptionByConsumer
	GetSubscriptionGroupConfig       = wirecode.GetSubscriptionGroupConfig
	CloneGroupOffset                 = wirecode.CloneGroupOffset
	GetBrokerConsumeStats            = wirecode.GetBrokerConsumeStats
	GetTopicConfig                   = wirecode.GetTopicConfig
)

// Admin response codes (RocketMQ ResponseCode).
const (
	SubscriptionGroupNotExist = wirecode.SubscriptionGroupNotExist
	ConsumerNotOnline         = wirecode.ConsumerNotOnline
	ConsumeMsgTimeout         = wirecode.ConsumeMsgTimeout
)

// ACL 2.0 admin request codes (RocketMQ 5.3 RequestCode AUTH_*): users and
// their policies, served by the broker (netloop/router/authadmin.go).
const (
	AuthCreateUser = wirecode.AuthCreateUser
	AuthUpdateUser = wirecode.AuthUpdateUser
	AuthDeleteUser = wirecode.AuthDeleteUser
	AuthGetUser    = wirecode.AuthGetUser
	AuthListUser   = wirecode.AuthListUser
	AuthCreateACL  = wirecode.AuthCreateACL
	AuthUpdateACL  = wirecode.AuthUpdateACL
	AuthDeleteACL  = wirecode.AuthDeleteACL
	AuthGetACL     = wirecode.AuthGetACL
	AuthListACL    = wirecode.AuthListACL
)

// Controller request codes (RocketMQ 5 RequestCode CONTROLLER_*, RIP-44),
// served by the controller embedded in the name server (actors/controller).
const (
	BrokerHeartbeat             = wirecode.BrokerHeartbeat
	ControllerAlterSyncStateSet = wirecode.ControllerAlterSyncStateSet
	ControllerElectMaster       = wirecode.ControllerElectMaster
	ControllerRegisterBroker    = wirecode.ControllerRegisterBroker
	ControllerGetReplicaInfo    = wirecode.ControllerGetReplicaInfo
	ControllerGetMetadataInfo   = wirecode.ControllerGetMetadataInfo
	ControllerGetSyncStateData  = wirecode.ControllerGetSyncStateData
	GetBrokerEpochCache         = wirecode.GetBrokerEpochCache
	UpdateControllerConfig      = wirecode.UpdateControllerConfig
	GetControllerConfig         = wirecode.GetControllerConfig
	ControllerGetNextBrokerID   = wirecode.ControllerGetNextBrokerID
	ControllerApplyBrokerID     = wirecode.ControllerApplyBrokerID
)

// The POP long-poll and controller answers.
const (
	PollingFull    = wirecode.PollingFull
	PollingTimeout = wirecode.PollingTimeout
)

// Lite topic codes (RocketMQ 5.5; docs/lite.md, "Over remoting").
const (
	PopLiteMessage                = wirecode.PopLiteMessage
	LiteSubscriptionCtl           = wirecode.LiteSubscriptionCtl
	LiteSubscriptionQuotaExceeded = wirecode.LiteSubscriptionQuotaExceeded
)
