package ctlwire

import (
	"slices"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// ServedCodes are the request codes Serve answers.
var ServedCodes = []int32{
	remoting.BrokerHeartbeat, remoting.ControllerAlterSyncStateSet, remoting.ControllerElectMaster,
	remoting.ControllerRegisterBroker, remoting.ControllerGetReplicaInfo, remoting.ControllerGetMetadataInfo,
	remoting.ControllerGetSyncStateData, remoting.GetBrokerEpochCache, remoting.ControllerGetNextBrokerID,
	remoting.ControllerApplyBrokerID, remoting.UpdateControllerConfig, remoting.GetControllerConfig,
}

// Handles reports whether code is a controller request code.
func Handles(code int32) bool { return slices.Contains(ServedCodes, code) }

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

// Serve serves one controller request of connection conn (the ACL already
// checked): decoded, handed to ctl, and its answer encoded and passed to
// reply, from the controller's stage; nothing is answered to a oneway
// request. It never blocks. A code that is not the controller's is
// answered REQUEST_CODE_NOT_SUPPORTED at once.
func Serve(ctl *controller.Controller, cmd *remoting.Command, conn uint64, reply func(*remoting.Command)) {
	req, ok := Decode(cmd)
	if !ok {
		if !cmd.IsOneway() {
			reply(remoting.NewResponse(cmd, remoting.RequestCodeNotSupported, "not a controller code"))
		}
		return
	}
	var answer func(controller.Answer)
	if !cmd.IsOneway() && reply != nil {
		answer = func(a controller.Answer) { reply(Encode(cmd, a)) }
	}
	ctl.Handle(req, conn, answer)
}
