// Package admin is the client (of wheelctl and the console) for RocketMQ's admin requests to a
// wheelmq broker and name server: topics, offsets, consumer groups, the
// cluster and runtime figures, and wheelmq's timer cancel.
//
// Requests and bodies follow RocketMQ's shapes (docs/compatibility.md and
// the facts on admin bodies), so a request the broker does not serve yet
// starts working when it does. A broker that answers
// REQUEST_CODE_NOT_SUPPORTED yields a *NotServedError; every request has a
// deadline (Session.Timeout), so nothing waits forever.
package admin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Request codes wheelctl sends (defined in actors/wirecode).
const (
	UpdateAndCreateSubscriptionGroup = remoting.UpdateAndCreateSubscriptionGroup
	GetAllSubscriptionGroupConfig    = remoting.GetAllSubscriptionGroupConfig
	GetTopicStatsInfo                = remoting.GetTopicStatsInfo
	GetConsumerConnectionList        = remoting.GetConsumerConnectionList
	GetConsumeStats                  = remoting.GetConsumeStats
)

// consumerNotOnline is a response code read here.
const consumerNotOnline = remoting.ConsumerNotOnline

// requestNames are RocketMQ's names of the requests wheelctl sends.
var requestNames = map[int32]string{
	remoting.QueryConsumerOffset: "QUERY_CONSUMER_OFFSET", remoting.UpdateAndCreateTopic: "UPDATE_AND_CREATE_TOPIC",
	remoting.GetAllTopicConfig: "GET_ALL_TOPIC_CONFIG", remoting.GetBrokerRuntimeInfo: "GET_BROKER_RUNTIME_INFO",
	remoting.GetMaxOffset: "GET_MAX_OFFSET", remoting.GetMinOffset: "GET_MIN_OFFSET",
	remoting.GetRouteInfoByTopic: "GET_ROUTEINFO_BY_TOPIC", remoting.GetBrokerClusterInfo: "GET_BROKER_CLUSTER_INFO",
	remoting.GetAllTopicListFromNameserver: "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	remoting.DeleteTopicInBroker:           "DELETE_TOPIC_IN_BROKER", remoting.DeleteTopicInNamesrv: "DELETE_TOPIC_IN_NAMESRV",
	remoting.CancelTimerMessage:   "CANCEL_TIMER_MESSAGE",
	remoting.ListTimerMessages:    "LIST_TIMER_MESSAGES",
	remoting.RecallMessage:        "RECALL_MESSAGE",
	GetAllSubscriptionGroupConfig: "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", GetTopicStatsInfo: "GET_TOPIC_STATS_INFO",
	GetConsumerConnectionList: "GET_CONSUMER_CONNECTION_LIST", GetConsumeStats: "GET_CONSUME_STATS",
	UpdateAndCreateSubscriptionGroup: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	remoting.SendMessage:             "SEND_MESSAGE", remoting.PullMessage: "PULL_MESSAGE",
	remoting.UpdateConsumerOffset: "UPDATE_CONSUMER_OFFSET", remoting.SearchOffsetByTimestamp: "SEARCH_OFFSET_BY_TIMESTAMP",
	remoting.HeartBeat: "HEART_BEAT", remoting.UnregisterClient: "UNREGISTER_CLIENT",
	remoting.ConsumerSendMsgBack: "CONSUMER_SEND_MSG_BACK", remoting.GetConsumerListByGroup: "GET_CONSUMER_LIST_BY_GROUP",
	remoting.SendMessageV2: "SEND_MESSAGE_V2", remoting.SendBatchMessage: "SEND_BATCH_MESSAGE",
	remoting.SendReplyMessage: "SEND_REPLY_MESSAGE", remoting.SendReplyMessageV2: "SEND_REPLY_MESSAGE_V2",
	remoting.EndTransaction: "END_TRANSACTION", remoting.LockBatchMQ: "LOCK_BATCH_MQ", remoting.UnlockBatchMQ: "UNLOCK_BATCH_MQ",
	remoting.QueryMessage: "QUERY_MESSAGE", remoting.ViewMessageByID: "VIEW_MESSAGE_BY_ID",
	remoting.InvokeBrokerToResetOffset: "INVOKE_BROKER_TO_RESET_OFFSET", remoting.QueryTopicConsumeByWho: "QUERY_TOPIC_CONSUME_BY_WHO",
}

// responseNames are RocketMQ's names of the answer codes a user may see.
var responseNames = map[int32]string{
	remoting.SystemError: "SYSTEM_ERROR", remoting.SystemBusy: "SYSTEM_BUSY",
	remoting.RequestCodeNotSupported: "REQUEST_CODE_NOT_SUPPORTED", remoting.MessageIllegal: "MESSAGE_ILLEGAL",
	remoting.ServiceNotAvailable: "SERVICE_NOT_AVAILABLE", remoting.NoPermission: "NO_PERMISSION",
	remoting.TopicNotExist: "TOPIC_NOT_EXIST", remoting.QueryNotFound: "QUERY_NOT_FOUND",
	remoting.SubscriptionNotExist: "SUBSCRIPTION_NOT_EXIST", remoting.InvalidParameter: "INVALID_PARAMETER",
	consumerNotOnline: "CONSUMER_NOT_ONLINE", remoting.FlushDiskTimeout: "FLUSH_DISK_TIMEOUT",
	remoting.PullNotFound: "PULL_NOT_FOUND", remoting.PullRetryImmediately: "PULL_RETRY_IMMEDIATELY",
	remoting.PullOffsetMoved: "PULL_OFFSET_MOVED",
}

// RequestName is RocketMQ's name of a request code.
func RequestName(code int32) string {
	if n, ok := requestNames[code]; ok {
		return n
	}
	return fmt.Sprintf("request %d", code)
}

// ResponseName is RocketMQ's name of a response code.
func ResponseName(code int32) string {
	if code == remoting.Success {
		return "SUCCESS"
	}
	if n, ok := responseNames[code]; ok {
		return n
	}
	return fmt.Sprintf("code %d", code)
}

// NotServedError means the server answered REQUEST_CODE_NOT_SUPPORTED.
type NotServedError struct {
	Server string
	Code   int32 // the request code
}

func (e *NotServedError) Error() string {
	return fmt.Sprintf("the server at %s does not serve %s (%d) yet", e.Server, RequestName(e.Code), e.Code)
}

// RefusedError is any other non-success answer.
type RefusedError struct {
	Server  string
	Request int32
	Code    int32
	Remark  string
}

func (e *RefusedError) Error() string {
	name := responseNames[e.Code]
	if name == "" {
		name = "error"
	}
	return fmt.Sprintf("%s refused by %s: %s (%d): %s", RequestName(e.Request), e.Server, name, e.Code, e.Remark)
}

// IsCode reports whether err is a refusal with that response code.
func IsCode(err error, code int32) bool {
	var r *RefusedError
	return errors.As(err, &r) && r.Code == code
}

// UnreachableError means no connection could be made to a server.
type UnreachableError struct {
	Addr string
	Err  error
}

func (e *UnreachableError) Error() string { return fmt.Sprintf("cannot reach %s: %v", e.Addr, e.Err) }
func (e *UnreachableError) Unwrap() error { return e.Err }

// DefaultTimeout bounds one request (dial included) when Session.Timeout
// is zero.
const DefaultTimeout = 5 * time.Second

// Session holds one connection per server for a command's requests.
type Session struct {
	// Timeout bounds each request, dial included (0: DefaultTimeout).
	Timeout time.Duration
	// Options are those of every connection: the signing hook and TLS
	// (remoting.ClientOptions.Sign and TLS; the zero value is plaintext and
	// unsigned).
	Options remoting.ClientOptions

	mu      sync.Mutex
	clients map[string]*remoting.Client // guarded by mu
}

// Close closes every connection.
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for addr, c := range s.clients {
		_ = c.Close()
		delete(s.clients, addr)
	}
}

func (s *Session) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultTimeout
}

// client returns the connection to addr, dialling it if needed.
func (s *Session) client(ctx context.Context, addr string) (*remoting.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[addr]; c != nil && c.Err() == nil {
		return c, nil
	}
	c, err := remoting.Dial(ctx, addr, s.Options)
	if err != nil {
		return nil, &UnreachableError{Addr: addr, Err: errors.Unwrap(err)}
	}
	if s.clients == nil {
		s.clients = map[string]*remoting.Client{}
	}
	s.clients[addr] = c
	return c, nil
}

// Call sends req to addr within the session's timeout and returns the
// answer: SUCCESS, or one of the codes in ok; anything else is an error.
func (s *Session) Call(ctx context.Context, addr string, req *remoting.Command, ok ...int32) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	c, err := s.client(ctx, addr)
	if err != nil {
		return nil, err
	}
	resp, err := c.Invoke(ctx, req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s to %s: no answer within %s", RequestName(req.Code), addr, s.timeout())
		}
		return nil, fmt.Errorf("%s to %s: %w", RequestName(req.Code), addr, err)
	}
	if resp.Code == remoting.Success {
		return resp, nil
	}
	for _, code := range ok {
		if resp.Code == code {
			return resp, nil
		}
	}
	if resp.Code == remoting.RequestCodeNotSupported {
		return nil, &NotServedError{Server: addr, Code: req.Code}
	}
	return nil, &RefusedError{Server: addr, Request: req.Code, Code: resp.Code, Remark: resp.Remark}
}
