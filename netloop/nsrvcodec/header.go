package nsrvcodec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Header field names of the name-server requests (RocketMQ's request header
// classes, as extFields).
const (
	fieldTopic              = "topic"
	fieldClusterName        = "clusterName"
	fieldBrokerName         = "brokerName"
	fieldBrokerAddr         = "brokerAddr"
	fieldBrokerID           = "brokerId"
	fieldHAServerAddr       = "haServerAddr"
	fieldMasterAddr         = "masterAddr"
	fieldHeartbeatTimeoutMs = "heartbeatTimeoutMillis"
	fieldEnableActingMaster = "enableActingMaster"
	fieldCompressed         = "compressed"
	fieldBodyCRC32          = "bodyCrc32"
	// fieldGRPCEndpoint is wheelmq's own REGISTER_BROKER field: the
	// broker's RocketMQ 5 gRPC endpoint (host:port), answered in routes
	// as BrokerData.grpcEndpoints. Java name servers ignore it.
	fieldGRPCEndpoint = "grpcEndpoint"
	// The KV requests' fields (PutKVConfigRequestHeader,
	// GetKVConfigRequestHeader, DeleteKVConfigRequestHeader,
	// GetKVListByNamespaceRequestHeader; GetKVConfigResponseHeader's value).
	fieldNamespace = "namespace"
	fieldKey       = "key"
	fieldValue     = "value"
	// fieldCluster is GetTopicsByClusterRequestHeader's cluster.
	fieldCluster = "cluster"
	// The answers' count fields of WIPE/ADD_WRITE_PERM_OF_BROKER.
	fieldWipeTopicCount = "wipeTopicCount"
	fieldAddTopicCount  = "addTopicCount"
)

// registerHeader is RegisterBrokerRequestHeader.
type registerHeader struct {
	info       namesrv.BrokerInfo
	compressed bool
	bodyCRC32  int64
}

// requiredField returns a header field that must be present and non-empty.
func requiredField(cmd *remoting.Command, name string) (string, error) {
	v := cmd.Field(name)
	if v == "" {
		return "", fmt.Errorf("%w: the custom field <%s> is null", namesrv.ErrMissingField, name)
	}
	return v, nil
}

// intField parses a decimal header field in [lo, hi]; ok is false when the
// field is absent or empty.
func intField(cmd *remoting.Command, name string, lo, hi int64) (v int64, ok bool, err error) {
	s := cmd.Field(name)
	if s == "" {
		return 0, false, nil
	}
	v, err = strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, false, fmt.Errorf("%w: %s %q is not an integer in [%d, %d]", namesrv.ErrBadField, name, s, lo, hi)
	}
	return v, true, nil
}

// boolField reads a boolean header field the way Java's Boolean.parseBoolean
// does: "true" in any case is true, anything else false.
func boolField(cmd *remoting.Command, name string) bool {
	return strings.EqualFold(cmd.Field(name), "true")
}

// parseBrokerKey reads clusterName, brokerName and brokerId (all required).
func parseBrokerKey(cmd *remoting.Command) (namesrv.BrokerKey, error) {
	var k namesrv.BrokerKey
	var err error
	if k.Cluster, err = requiredField(cmd, fieldClusterName); err != nil {
		return k, err
	}
	if k.BrokerName, err = requiredField(cmd, fieldBrokerName); err != nil {
		return k, err
	}
	id, ok, err := intField(cmd, fieldBrokerID, math.MinInt64, math.MaxInt64)
	if err != nil {
		return k, err
	}
	if !ok {
		return k, fmt.Errorf("%w: the custom field <%s> is null", namesrv.ErrMissingField, fieldBrokerID)
	}
	if id < 0 {
		return k, fmt.Errorf("%w: brokerId %d is negative", namesrv.ErrInvalidValue, id)
	}
	k.BrokerID = id
	return k, nil
}

// parseRegisterHeader reads a REGISTER_BROKER header.
func parseRegisterHeader(cmd *remoting.Command) (registerHeader, error) {
	var h registerHeader
	key, err := parseBrokerKey(cmd)
	if err != nil {
		return h, err
	}
	addr, err := requiredField(cmd, fieldBrokerAddr)
	if err != nil {
		return h, err
	}
	timeoutMs, ok, err := intField(cmd, fieldHeartbeatTimeoutMs, math.MinInt64, math.MaxInt64)
	if err != nil {
		return h, err
	}
	if ok && (timeoutMs <= 0 || timeoutMs > int64(math.MaxInt64/time.Millisecond)) {
		return h, fmt.Errorf("%w: %s %d is out of range", namesrv.ErrInvalidValue, fieldHeartbeatTimeoutMs, timeoutMs)
	}
	// Java writes an Integer (may be negative); accept the unsigned form too.
	crc, _, err := intField(cmd, fieldBodyCRC32, math.MinInt32, math.MaxUint32)
	if err != nil {
		return h, err
	}
	h.info = namesrv.BrokerInfo{
		Cluster:          key.Cluster,
		BrokerName:       key.BrokerName,
		BrokerAddr:       addr,
		HAServerAddr:     cmd.Field(fieldHAServerAddr),
		BrokerID:         key.BrokerID,
		HeartbeatTimeout: time.Duration(timeoutMs) * time.Millisecond,
		GRPCEndpoint:     cmd.Field(fieldGRPCEndpoint),
	}
	h.compressed = boolField(cmd, fieldCompressed)
	h.bodyCRC32 = crc
	return h, nil
}

// presentField returns a header field that must be present; unlike
// requiredField it may be empty (Java's @CFNotNull refuses null only).
func presentField(cmd *remoting.Command, name string) (string, error) {
	v, ok := cmd.ExtFields[name]
	if !ok {
		return "", fmt.Errorf("%w: the custom field <%s> is null", namesrv.ErrMissingField, name)
	}
	return v, nil
}

// kvFields reads the namespace and key of a KV request.
func kvFields(req *remoting.Command) (namespace, key string, err error) {
	if namespace, err = presentField(req, fieldNamespace); err != nil {
		return "", "", err
	}
	if key, err = presentField(req, fieldKey); err != nil {
		return "", "", err
	}
	return namespace, key, nil
}
