package router

import (
	"fmt"

	"github.com/wheelmq/wheelmq/actors/acl"
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// adminHandlers are the operator tools' requests (mqadmin,
// rocketmq-dashboard, the Go admin API), kept in their own table and merged
// into handlers at start-up.
var adminHandlers = map[int32]handler{
	remoting.UpdateAndCreateSubscriptionGroup: {(*Router).handleUpdateGroup, []string{groups.StageName}},
	remoting.UpdateAndCreateGroupList:         {(*Router).handleCreateGroupList, []string{groups.StageName}},
	remoting.UpdateAndCreateTopicList:         {(*Router).handleCreateTopicList, []string{topics.StageName}},
	remoting.GetAllSubscriptionGroupConfig:    {(*Router).handleAllGroups, nil},
	remoting.DeleteSubscriptionGroup:          {(*Router).handleDeleteGroup, []string{groups.StageName}},
	remoting.GetBrokerRuntimeInfo:             {(*Router).handleRuntimeInfo, []string{pull.StageName}},
	remoting.GetTopicStatsInfo:                {(*Router).handleTopicStats, []string{pull.StageName}},
	remoting.GetConsumeStats:                  {(*Router).handleConsumeStats, []string{offsets.StageName, pull.StageName}},
	remoting.GetEarliestMsgStoretime:          {(*Router).handleEarliestStoreTime, []string{pull.StageName}},
	remoting.GetConsumerConnectionList:        {(*Router).handleConsumerConnections, []string{clients.StageName}},
	remoting.GetProducerConnectionList:        {(*Router).handleProducerConnections, []string{clients.StageName}},
	remoting.GetConsumerRunningInfo:           {(*Router).handleConsumerRunningInfo, []string{clients.StageName}},
	remoting.InvokeBrokerToResetOffset:        {(*Router).handleResetOffset, []string{offsets.StageName, pull.StageName}},
	remoting.QueryTopicConsumeByWho:           {(*Router).handleTopicConsumeByWho, []string{offsets.StageName}},
	remoting.GetSystemTopicListFromBroker:     {(*Router).handleSystemTopics, nil},
	remoting.ConsumeMessageDirectly:           {(*Router).handleConsumeDirectly, []string{pull.StageName, clients.StageName}},
	remoting.GetAllProducerInfo:               {(*Router).handleAllProducers, []string{clients.StageName}},
	remoting.QueryTopicsByConsumer:            {(*Router).handleTopicsByConsumer, []string{offsets.StageName}},
	remoting.QuerySubscriptionByConsumer:      {(*Router).handleSubscriptionByConsumer, []string{clients.StageName}},
	remoting.GetSubscriptionGroupConfig:       {(*Router).handleGroupConfig, nil},
	remoting.CloneGroupOffset:                 {(*Router).handleCloneGroupOffset, []string{offsets.StageName}},
	remoting.GetBrokerConsumeStats:            {(*Router).handleBrokerConsumeStats, []string{offsets.StageName, pull.StageName}},
	remoting.GetTopicConfig:                   {(*Router).handleTopicConfig, nil},
	remoting.GetBrokerConfig:                  {(*Router).handleGetBrokerConfig, nil},
	remoting.UpdateBrokerConfig:               {(*Router).handleUpdateBrokerConfig, nil},
	remoting.GetBrokerEpochCache:              {(*Router).handleEpochCache, nil},
	// ACL 2.0 users and policies (authadmin.go); admin accounts only.
	remoting.AuthCreateUser: {(*Router).handleCreateUser, []string{acl.StageName}},
	remoting.AuthUpdateUser: {(*Router).handleUpdateUser, []string{acl.StageName}},
	remoting.AuthDeleteUser: {(*Router).handleDeleteUser, []string{acl.StageName}},
	remoting.AuthGetUser:    {(*Router).handleGetUser, nil},
	remoting.AuthListUser:   {(*Router).handleListUsers, nil},
	remoting.AuthCreateACL:  {(*Router).handlePutACL, []string{acl.StageName}},
	remoting.AuthUpdateACL:  {(*Router).handlePutACL, []string{acl.StageName}},
	remoting.AuthDeleteACL:  {(*Router).handleDeleteACL, []string{acl.StageName}},
	remoting.AuthGetACL:     {(*Router).handleGetACL, nil},
	remoting.AuthListACL:    {(*Router).handleListACLs, nil},
}

func init() {
	for code, h := range adminHandlers {
		if _, dup := handlers[code]; dup {
			panic(fmt.Sprintf("router: request code %d has two handlers", code))
		}
		handlers[code] = h
	}
}
