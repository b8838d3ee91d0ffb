package controller

import (
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// brokerDoc is the rule of the codes brokers send.
const brokerDoc = "admin (the broker's --access-key; all-in-one: the process's internal credential)"

// Permissions is what each controller code of the name server's port needs
// under an ACL: all are admin-only (the broker codes with the broker's
// credential, like REGISTER_BROKER), the reads included, since they show
// the groups' addresses. docs/compatibility.md ("Controller codes") is
// this table.
var Permissions = auth.Table{
	remoting.BrokerHeartbeat:             {Needs: auth.Admin.Needs, Doc: brokerDoc},
	remoting.ControllerAlterSyncStateSet: {Needs: auth.Admin.Needs, Doc: brokerDoc},
	remoting.ControllerRegisterBroker:    {Needs: auth.Admin.Needs, Doc: brokerDoc},
	remoting.ControllerGetNextBrokerID:   {Needs: auth.Admin.Needs, Doc: brokerDoc},
	remoting.ControllerApplyBrokerID:     {Needs: auth.Admin.Needs, Doc: brokerDoc},
	remoting.ControllerGetReplicaInfo:    auth.Admin,
	remoting.ControllerGetMetadataInfo:   auth.Admin,
	remoting.ControllerGetSyncStateData:  auth.Admin,
	remoting.GetBrokerEpochCache:         auth.Admin,
	remoting.ControllerElectMaster:       auth.Admin,
	remoting.UpdateControllerConfig:      auth.Admin,
	remoting.GetControllerConfig:         auth.Admin,
}
