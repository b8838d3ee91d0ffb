package nsrvcodec

import (
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// ServedCodes are the request codes the name server answers (Decode
// knows them; GET_NAMESRV_CONFIG is the actor's); every other code gets
// REQUEST_CODE_NOT_SUPPORTED.
var ServedCodes = []int32{
	remoting.PutKVConfig, remoting.GetKVConfig, remoting.DeleteKVConfig, remoting.RegisterBroker,
	remoting.UnregisterBroker, remoting.GetRouteInfoByTopic, remoting.GetBrokerClusterInfo,
	remoting.GetAllTopicListFromNameserver, remoting.DeleteTopicInNamesrv, remoting.GetKVListByNamespace,
	remoting.WipeWritePermOfBroker, remoting.GetTopicsByCluster, remoting.GetSystemTopicListFromNS,
	remoting.GetNamesrvConfig, remoting.AddWritePermOfBroker,
}

// Permissions is what each request code of the name server's port needs
// under an ACL: a route lookup PUB or SUB on its topic; everything else,
// registration included (a registered broker receives the sends of every
// topic it claims), an admin account. Codes missing here need an admin
// account too.
var Permissions = auth.Table{
	remoting.GetRouteInfoByTopic: auth.FieldRule("PUB or SUB on topic (a %RETRY% topic: on its group)",
		auth.FieldNeed{Field: fieldTopic, Kind: auth.KindTopic, Perm: auth.PermAny}),
	remoting.RegisterBroker:                {Needs: auth.Admin.Needs, Doc: registrationDoc},
	remoting.UnregisterBroker:              {Needs: auth.Admin.Needs, Doc: registrationDoc},
	remoting.PutKVConfig:                   auth.Admin,
	remoting.GetKVConfig:                   auth.Admin,
	remoting.DeleteKVConfig:                auth.Admin,
	remoting.GetKVListByNamespace:          auth.Admin,
	remoting.GetBrokerClusterInfo:          auth.Admin,
	remoting.GetAllTopicListFromNameserver: auth.Admin,
	remoting.DeleteTopicInNamesrv:          auth.Admin,
	remoting.WipeWritePermOfBroker:         auth.Admin,
	remoting.AddWritePermOfBroker:          auth.Admin,
	remoting.GetTopicsByCluster:            auth.Admin,
	remoting.GetSystemTopicListFromNS:      auth.Admin,
	remoting.GetNamesrvConfig:              auth.Admin,
}

const registrationDoc = "admin (the broker's --access-key; all-in-one: the process's internal credential)"
