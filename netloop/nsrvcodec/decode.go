package nsrvcodec

import (
	"errors"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// errUnsupported marks a request code the name server does not serve.
var errUnsupported = errors.New("nsrvcodec: request code not supported")

// Decode reads a name-server request's header into its typed call. It
// fails with errUnsupported for a code the name server does not serve,
// and otherwise with an error wrapping the namesrv package's sentinels
// (or Java's bare remark for the write-permission and cluster fields),
// whose namesrv.StatusOf is the refusal.
func Decode(cmd *remoting.Command) (namesrv.Call, error) {
	switch cmd.Code {
	case remoting.RegisterBroker:
		h, err := parseRegisterHeader(cmd)
		if err != nil {
			return nil, err
		}
		return namesrv.RegisterBroker{Info: h.info, Compressed: h.compressed, BodyCRC32: h.bodyCRC32,
			Body: cmd.Body}, nil
	case remoting.UnregisterBroker:
		key, err := parseBrokerKey(cmd)
		if err != nil {
			return nil, err
		}
		addr, err := requiredField(cmd, fieldBrokerAddr)
		if err != nil {
			return nil, err
		}
		return namesrv.UnregisterBroker{Key: key, Addr: addr}, nil
	case remoting.GetRouteInfoByTopic:
		topic, err := requiredField(cmd, fieldTopic)
		if err != nil {
			return nil, err
		}
		return namesrv.GetRoute{Topic: topic}, nil
	case remoting.GetBrokerClusterInfo:
		return namesrv.GetClusterInfo{}, nil
	case remoting.GetAllTopicListFromNameserver:
		return namesrv.GetAllTopics{}, nil
	case remoting.DeleteTopicInNamesrv:
		topic, err := requiredField(cmd, fieldTopic)
		if err != nil {
			return nil, err
		}
		return namesrv.DeleteTopic{Topic: topic, Cluster: cmd.Field(fieldClusterName)}, nil
	case remoting.PutKVConfig:
		namespace, key, err := kvFields(cmd)
		if err != nil {
			return nil, err
		}
		value, err := presentField(cmd, fieldValue)
		if err != nil {
			return nil, err
		}
		return namesrv.PutKV{Namespace: namespace, Key: key, Value: value}, nil
	case remoting.GetKVConfig:
		namespace, key, err := kvFields(cmd)
		return namesrv.GetKV{Namespace: namespace, Key: key}, err
	case remoting.DeleteKVConfig:
		namespace, key, err := kvFields(cmd)
		return namesrv.DeleteKV{Namespace: namespace, Key: key}, err
	case remoting.GetKVListByNamespace:
		namespace, err := presentField(cmd, fieldNamespace)
		return namesrv.GetKVList{Namespace: namespace}, err
	case remoting.GetSystemTopicListFromNS:
		return namesrv.GetSystemTopics{}, nil
	case remoting.GetTopicsByCluster:
		cluster, ok := cmd.ExtFields[fieldCluster]
		if !ok {
			return nil, errors.New("the custom field <cluster> is null")
		}
		return namesrv.GetTopicsByCluster{Cluster: cluster}, nil
	case remoting.WipeWritePermOfBroker, remoting.AddWritePermOfBroker:
		name, ok := cmd.ExtFields[fieldBrokerName]
		if !ok || name == "" {
			return nil, errors.New("the custom field <brokerName> is null")
		}
		if cmd.Code == remoting.WipeWritePermOfBroker {
			return namesrv.WipeWritePerm{BrokerName: name}, nil
		}
		return namesrv.AddWritePerm{BrokerName: name}, nil
	case remoting.GetNamesrvConfig:
		return namesrv.GetConfig{}, nil
	}
	return nil, errUnsupported
}
