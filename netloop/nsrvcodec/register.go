package nsrvcodec

// The requests a broker sends to name servers (its registrar builds them
// here and sends them with the remoting client).

import (
	"strconv"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// NewRegisterRequest builds the REGISTER_BROKER request a broker sends every
// registration period: the header fields, an uncompressed JSON
// RegisterBrokerBody carrying topics and dv (namesrv.EncodeRegisterBody),
// and bodyCrc32 (RocketMQ's masked CRC-32 of the body). It fails when info
// or a topic config is invalid.
func NewRegisterRequest(info namesrv.BrokerInfo, topics map[string]meta.TopicConfig, dv namesrv.DataVersion) (*remoting.Command, error) {
	body, err := namesrv.EncodeRegisterBody(info, topics, dv)
	if err != nil {
		return nil, err
	}
	ext := brokerFields(info)
	if info.HAServerAddr != "" {
		ext[fieldHAServerAddr] = info.HAServerAddr
	}
	if info.GRPCEndpoint != "" {
		ext[fieldGRPCEndpoint] = info.GRPCEndpoint
	}
	if ms := info.HeartbeatTimeout.Milliseconds(); ms > 0 {
		ext[fieldHeartbeatTimeoutMs] = strconv.FormatInt(ms, 10)
	}
	ext[fieldEnableActingMaster] = "false"
	ext[fieldCompressed] = "false"
	ext[fieldBodyCRC32] = strconv.FormatInt(namesrv.BodyCRC32(body), 10)
	return remoting.NewRequest(remoting.RegisterBroker, ext, body), nil
}

// NewUnregisterRequest builds the UNREGISTER_BROKER request a broker sends
// when it shuts down.
func NewUnregisterRequest(info namesrv.BrokerInfo) *remoting.Command {
	return remoting.NewRequest(remoting.UnregisterBroker, brokerFields(info), nil)
}

// brokerFields returns the identity header fields shared by both requests.
func brokerFields(info namesrv.BrokerInfo) map[string]string {
	return map[string]string{
		fieldClusterName: info.Cluster,
		fieldBrokerName:  info.BrokerName,
		fieldBrokerAddr:  info.BrokerAddr,
		fieldBrokerID:    strconv.FormatInt(info.BrokerID, 10),
	}
}
