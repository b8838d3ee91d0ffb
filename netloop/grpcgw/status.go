package grpcgw

import (
	"fmt"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

// okStatus is the in-band OK.
func okStatus() *v2.Status { return &v2.Status{Code: v2.Code_OK, Message: "OK"} }

// statusf builds an in-band status.
func statusf(code v2.Code, format string, args ...any) *v2.Status {
	return &v2.Status{Code: code, Message: fmt.Sprintf(format, args...)}
}

// internalStatus reports a failed internal request.
func internalStatus(err error) *v2.Status {
	return &v2.Status{Code: v2.Code_INTERNAL_SERVER_ERROR, Message: err.Error()}
}
